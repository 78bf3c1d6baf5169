package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/migrations"
)

func newMigrateCmd(e *env) *cobra.Command {
	var statusOnly bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded schema migrations to DATABASE_URL",
		Long: `Migrate applies the embedded schema migrations (jackc/tern, under an advisory lock) and
prints the version the schema is at.

With --status it changes nothing: it prints the applied and the latest version and exits 0
when they are equal, 3 when migrations are pending.`,
		Example: `  DATABASE_URL=postgres://postgres@localhost/execledger execledger migrate
  execledger migrate --status || echo "migrations pending"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd.Context(), e, statusOnly)
		},
	}
	cmd.Flags().BoolVar(&statusOnly, "status", false, "print the applied and latest versions; change nothing (exit 3: migrations pending)")
	e.configFlag(cmd)
	return cmd
}

func runMigrate(ctx context.Context, e *env, statusOnly bool) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer conn.Release()

	latest, err := migrations.Latest(ctx, conn.Conn())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if statusOnly {
		cur, err := migrations.Current(ctx, conn.Conn())
		if err != nil {
			return fail(exitError, "%v", err)
		}
		fmt.Fprintf(e.io.out, "schema version %d of %d\n", cur, latest)
		if cur != latest {
			return exitCode(exitNotOK) // the line above says it
		}
		return nil
	}
	v, err := migrations.Migrate(ctx, conn.Conn())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "schema at version %d of %d\n", v, latest)
	return nil
}
