package main

import (
	"context"
	"log/slog"

	"github.com/execledger/execledger/internal/config"
)

// startEmbedded fails: internal/pgcluster runs PostgreSQL with Unix
// process groups, credentials and file locks.
func startEmbedded(context.Context, *config.Config, *slog.Logger, func()) (embeddedDB, string, func(), error) {
	return nil, "", nil, fail(exitError, "execledger dev cannot start an embedded PostgreSQL on Windows; set DATABASE_URL (or [database] url) to a running server")
}

// startBenchCluster fails, as startEmbedded does.
func startBenchCluster(context.Context, string, []string, *slog.Logger) (string, int, func(), error) {
	return "", 0, nil, fail(exitError, "bench --private-cluster cannot start PostgreSQL on Windows")
}
