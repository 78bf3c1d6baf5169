package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/execledger/execledger/migrations"
)

func runMigrate(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "migrate")
	statusOnly := fs.Bool("status", false, "print the applied and latest versions; change nothing")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 0 {
		return e.fail(exitUsage, "usage: execledger migrate [--config FILE] [--status]")
	}
	cfg, err := e.loadConfig(*cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer conn.Release()

	latest, err := migrations.Latest(ctx, conn.Conn())
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	if *statusOnly {
		cur, err := migrations.Current(ctx, conn.Conn())
		if err != nil {
			return e.fail(exitError, "%v", err)
		}
		fmt.Fprintf(e.io.out, "schema version %d of %d\n", cur, latest)
		if cur != latest {
			return exitNotOK
		}
		return exitOK
	}
	v, err := migrations.Migrate(ctx, conn.Conn())
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "schema at version %d of %d\n", v, latest)
	return exitOK
}
