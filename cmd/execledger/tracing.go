package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/tracing"
)

// startTracing starts OpenTelemetry tracing when the OTEL_* environment asks
// for it (internal/tracing): nil, and nothing running, when it does not.
// The returned stop flushes the spans still queued.
func (e *env) startTracing(ctx context.Context, logger *slog.Logger) (*tracing.Provider, func(), error) {
	s, err := tracing.FromEnv(e.environ)
	if err != nil || !s.Enabled {
		return nil, func() {}, err
	}
	tp, err := tracing.Start(ctx, s, readVersion().Version)
	if err != nil {
		return nil, func() {}, err
	}
	logger.Info("tracing", slog.String("exporter", s.Exporter), slog.String("protocol", s.Protocol))
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			logger.Warn("tracing: flushing spans", slog.Any("error", err))
		}
	}, nil
}

// tracePool makes the pool's queries spans of their callers' traces when tp
// is set.
func tracePool(tp *tracing.Provider) func(*pgxpool.Config) {
	return func(pc *pgxpool.Config) {
		if tp != nil {
			tracing.TracePool(pc, tp)
		}
	}
}
