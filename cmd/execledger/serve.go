package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/opsserver"
	"github.com/execledger/execledger/migrations"
)

func runServe(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "serve")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 0 {
		return e.fail(exitUsage, "usage: execledger serve [--config FILE]")
	}
	cfg, err := e.loadConfig(*cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	logger := e.logger(cfg)
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	if err := serve(ctx, cfg, pool, logger); err != nil {
		return e.fail(exitError, "%v", err)
	}
	return exitOK
}

// serve runs the service until ctx ends.
func serve(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) error {
	if err := checkSchema(ctx, pool); err != nil {
		return err
	}
	logger.Info("serving", slog.String("label", cfg.Serve.Label), slog.String("database", redactURL(cfg.Database.URL)))
	if cfg.Serve.Listen == "" {
		<-ctx.Done()
		return nil
	}
	ops := opsserver.New(pool, logger)
	return ops.Serve(ctx, cfg.Serve.Listen, func(a net.Addr) {
		logger.Info("operations endpoints", slog.String("healthz", "http://"+a.String()+"/healthz"),
			slog.String("metrics", "http://"+a.String()+"/metrics"))
	})
}

// checkSchema refuses to serve a database this binary has not migrated.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	latest, err := migrations.Latest(ctx, conn.Conn())
	if err != nil {
		return err
	}
	cur, err := migrations.Current(ctx, conn.Conn())
	if err != nil {
		return err
	}
	if cur != latest {
		return fmt.Errorf("the database schema is at version %d, this binary needs %d: run `execledger migrate`", cur, latest)
	}
	return nil
}
