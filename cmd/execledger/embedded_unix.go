//go:build unix

package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/pgcluster"
)

// startEmbedded starts `execledger dev`'s PostgreSQL in [dev] data_dir and
// points cfg's database URL at it; cancel is called if the server dies.
// urlFile holds its URL, for the next start; stop stops it.
func startEmbedded(ctx context.Context, cfg *config.Config, logger *slog.Logger, cancel func()) (_ embeddedDB, urlFile string, stop func(), _ error) {
	dir, err := filepath.Abs(cfg.Dev.DataDir)
	if err != nil {
		return nil, "", nil, fail(exitError, "dev.data_dir: %v", err)
	}
	// The URL goes beside the data directory, and the next start takes
	// the same port when it is free, so an exported DATABASE_URL stays
	// good across restarts.
	urlFile = filepath.Join(filepath.Dir(dir), "database_url")
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: dir, Port: cfg.Dev.Port, RunAsUser: cfg.Dev.RunAs,
		PreferredPort: lastPort(urlFile), Logger: logger.With(slog.String("component", "postgres"))})
	if err != nil {
		return nil, "", nil, fail(exitError, "%v", err)
	}
	stop = func() {
		if err := cluster.Stop(context.WithoutCancel(ctx)); err != nil {
			logger.Error("stop embedded PostgreSQL", slog.Any("error", err))
		}
	}
	go func() {
		<-cluster.Done()
		cancel() // the server died: stop serving
	}()
	if err := ensureDatabase(ctx, cluster.URL("postgres"), devDatabase); err != nil {
		return nil, "", nil, fail(exitError, "%v", err)
	}
	cfg.Database.URL = cluster.URL(devDatabase)
	if err := os.WriteFile(urlFile, []byte(cfg.Database.URL+"\n"), 0o644); err != nil {
		return nil, "", nil, fail(exitError, "write %s: %v", urlFile, err)
	}
	logger.Info("embedded PostgreSQL", slog.String("data_dir", dir), slog.Int("port", cluster.Port()),
		slog.String("log", cluster.LogFile()), slog.String("url_file", urlFile))
	return cluster, urlFile, stop, nil
}

// startBenchCluster starts a PostgreSQL server of bench's own in dir
// (initdb'd when empty) with settings ("name=value"), on a free port, and
// returns its superuser URL, its postmaster's pid and how to stop it.
func startBenchCluster(ctx context.Context, dir string, settings []string, logger *slog.Logger) (url string, pid int, stop func(), _ error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", 0, nil, fail(exitError, "--private-cluster: %v", err)
	}
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: abs, Settings: settings,
		Logger: logger.With(slog.String("component", "postgres"))})
	if err != nil {
		return "", 0, nil, fail(exitError, "--private-cluster: %v", err)
	}
	stop = func() {
		if err := cluster.Stop(context.WithoutCancel(ctx)); err != nil {
			logger.Error("stop the benchmark's PostgreSQL", slog.Any("error", err))
		}
	}
	b, err := os.ReadFile(filepath.Join(abs, "postmaster.pid"))
	if err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		pid, _ = strconv.Atoi(strings.TrimSpace(line))
	}
	return cluster.URL("postgres"), pid, stop, nil
}
