package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/config"
)

// noArgs, exactArgs and maxArgs check a command's positional arguments;
// their errors are usage errors that say what the command wants, as its
// Use line names them.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fail(exitUsage, "%s takes no arguments; got %s", commandName(cmd), quoteArgs(args))
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fail(exitUsage, "%s wants %s; got %s", commandName(cmd), argNames(cmd), quoteArgs(args))
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return fail(exitUsage, "%s wants at most %s; got %s", commandName(cmd), argNames(cmd), quoteArgs(args))
		}
		return nil
	}
}

// argNames is the arguments part of cmd's Use: "TOOL JSON".
func argNames(cmd *cobra.Command) string {
	var names []string
	for _, f := range strings.Fields(cmd.Use)[1:] {
		if !strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "[-") {
			names = append(names, f)
		}
	}
	return strings.Join(names, " ")
}

func quoteArgs(args []string) string {
	if len(args) == 0 {
		return "no arguments"
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// connect loads the configuration, opens the database pool and checks
// the database (checkDatabase); the caller closes the pool.
func (e *env) connect(ctx context.Context, cfgPath string) (config.Config, *pgxpool.Pool, error) {
	cfg, err := e.loadConfig(cfgPath)
	if err != nil {
		return config.Config{}, nil, err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return config.Config{}, nil, err
	}
	if err := e.checkDatabase(ctx, pool); err != nil {
		pool.Close()
		return config.Config{}, nil, err
	}
	return cfg, pool, nil
}

// connectReader loads the configuration and opens the read-only pool of
// openReader (the replica when database.replica_url is set); the caller
// closes the pool.
func (e *env) connectReader(ctx context.Context, cfgPath string) (config.Config, *pgxpool.Pool, error) {
	cfg, err := e.loadConfig(cfgPath)
	if err != nil {
		return config.Config{}, nil, err
	}
	pool, err := openReader(ctx, cfg)
	if err != nil {
		return config.Config{}, nil, err
	}
	if err := e.checkDatabase(ctx, pool); err != nil {
		pool.Close()
		return config.Config{}, nil, err
	}
	return cfg, pool, nil
}

// checkDatabase is what a command checks once connected: it notes the
// login and its ledger roles (for explainDenial), then that the schema
// is this binary's (checkSchema).
func (e *env) checkDatabase(ctx context.Context, pool *pgxpool.Pool) error {
	l, err := readLogin(ctx, pool)
	if err != nil {
		return err
	}
	e.login = l
	return checkSchemaAs(ctx, pool, l)
}
