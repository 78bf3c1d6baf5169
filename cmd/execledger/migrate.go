package main

import (
	"context"
	"fmt"

	"github.com/execledger/execledger/migrations"
)

func runMigrate(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "migrate")
	statusOnly := fs.Bool("status", false, "print the applied and latest versions; change nothing")
	if _, code, ok := e.parseArgs(fs, args, 0, "execledger migrate [--config FILE] [--status]"); !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
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
