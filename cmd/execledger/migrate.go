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
		Long: `Migrate applies the embedded numbered schema migrations (jackc/tern), then, in one
transaction, every definition file (a function, view, table's row-security policies; see
docs/migrations.md) whose text changed since it was applied or that was applied before a
numbered migration ran, in the order the files' "-- depends:" lines declare. Both steps hold
one advisory lock, so concurrent runs serialize. It prints the version the schema is at and
the definitions it applied.

With --status it changes nothing: it prints the applied and the latest version, then one
line per pending definition ("pending definition api/submit.sql") and per retired one
(recorded, no longer shipped), and exits 0 when nothing is pending, 3 when something is.`,
		Example: `  DATABASE_URL=postgres://postgres@localhost/execledger execledger migrate
  execledger migrate --status || echo "migrations pending"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd.Context(), e, statusOnly)
		},
	}
	cmd.Flags().BoolVar(&statusOnly, "status", false, "print the applied and latest versions and the pending definitions; change nothing (exit 3: something pending)")
	e.configFlag(cmd)
	return cmd
}

func runMigrate(ctx context.Context, e *env, statusOnly bool) error {
	// Not e.connect: its schema check is what migrate is there to fix.
	cfg, err := e.loadConfig(e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer conn.Release()

	if statusOnly {
		st, err := migrations.ReadStatus(ctx, conn.Conn())
		if err != nil {
			return fail(exitError, "%v", err)
		}
		printStatus(e, st)
		if !st.UpToDate() {
			return exitCode(exitNotOK) // the lines above say it
		}
		return nil
	}
	r, err := migrations.Run(ctx, conn.Conn())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "schema at version %d of %d, %d definitions applied\n", r.Version, r.Latest, len(r.Applied))
	for _, d := range r.Applied {
		fmt.Fprintf(e.io.out, "applied definition %s\n", d)
	}
	return nil
}

func printStatus(e *env, st migrations.Status) {
	fmt.Fprintf(e.io.out, "schema version %d of %d, %d definitions pending\n", st.Version, st.Latest, len(st.Pending))
	for _, d := range st.Pending {
		fmt.Fprintf(e.io.out, "pending definition %s\n", d)
	}
	for _, d := range st.Retired {
		fmt.Fprintf(e.io.out, "retired definition %s (recorded, no longer shipped)\n", d)
	}
}
