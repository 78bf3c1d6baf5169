package main

import (
	"context"
	"errors"
	"flag"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/config"
)

// parseArgs parses a command's flags and wants exactly n positional
// arguments. When it returns ok false the command returns code: help was
// asked for, or the usage line was printed.
func (e *env) parseArgs(fs *flag.FlagSet, args []string, n int, usage string) (pos []string, code int, ok bool) {
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, exitOK, false
	}
	if err != nil || len(pos) != n {
		return nil, e.fail(exitUsage, "usage: %s", usage), false
	}
	return pos, exitOK, true
}

// connect loads the configuration and opens the database pool; the caller
// closes the pool.
func (e *env) connect(ctx context.Context, cfgPath string) (config.Config, *pgxpool.Pool, error) {
	cfg, err := e.loadConfig(cfgPath)
	if err != nil {
		return config.Config{}, nil, err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return config.Config{}, nil, err
	}
	return cfg, pool, nil
}
