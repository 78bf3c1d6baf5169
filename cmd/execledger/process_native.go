//go:build !linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/processrun"
	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// resolveTier makes tier "auto" C: off Linux tier C is the platform's
// backend, and there is no tier B. Auto also keeps workspaces
// (workspace_ttl 0), since deleting idle ones needs Linux, and says so.
func resolveTier(_ context.Context, p *config.Process) (warn string, err error) {
	if p.Tier != "auto" {
		return "", nil
	}
	p.Tier = "C"
	if p.WorkspaceTTL.Duration > 0 {
		p.WorkspaceTTL.Duration = 0
		return "process.run keeps every run's workspace: deleting idle ones (process_run.workspace_ttl) needs Linux", nil
	}
	return "", nil
}

// processTools builds process.run off Linux: tier C under the platform's
// backend (sandbox-exec on macOS, a job object on Windows), foreground
// calls only. What the backend cannot enforce is a configuration error
// here (tier B, strict egress without network isolation, a workspace TTL)
// or a refusal per call (background, strict egress to declared hosts),
// never a weaker run. Background processes being Linux's, there is no
// process.status nor process.stop.
func processTools(ctx context.Context, p config.Process, _ *pgxpool.Pool, logger *slog.Logger) ([]executor.Tool, *processrun.Tool, error) {
	warn, err := resolveTier(ctx, &p)
	if err != nil {
		return nil, nil, err
	}
	if warn != "" {
		logger.Warn(warn)
	}
	root, err := filepath.Abs(p.WorkspaceRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("process_run.workspace_root: %w", err)
	}
	pr, err := processrun.New(processrun.Config{
		Tier: p.Tier, WorkspaceRoot: root,
		Policy: procinput.Policy{AllowedExecutables: p.AllowedExecutables, AllowInterpreters: p.AllowInterpreters,
			AllowDetached: p.AllowDetached, MaxBackgroundLifetime: p.MaxBackgroundLifetime.Duration,
			EgressMode: p.EgressMode, EgressAllowlist: p.EgressAllowlist, MaxTimeout: p.MaxTimeout.Duration},
		Limits: procinit.Limits{CPUSeconds: uint64(p.RlimitCPUSeconds), AddressSpace: uint64(p.RlimitAddressSpace),
			FileSize: uint64(p.RlimitFileSize), OpenFiles: uint64(p.RlimitOpenFiles), Processes: uint64(p.RlimitProcesses)},
		OutputLimit: p.OutputLimitBytes, WorkspaceTTL: p.WorkspaceTTL.Duration,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("process_run: %w", err)
	}
	logger.Info("process.run", slog.String("executor", pr.Executor()))
	return []executor.Tool{pr}, pr, nil
}
