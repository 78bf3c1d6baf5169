package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/processrun"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/ledger"
)

// resolveTier makes tier "auto" C where bubblewrap can make a sandbox,
// else B when the daemon is root (tier B needs root); warn, when not "",
// says what tier B lacks, for the log and dev's banner. Any other tier is
// left as it is.
func resolveTier(ctx context.Context, p *config.Process) (warn string, err error) {
	if p.Tier != "auto" {
		return "", nil
	}
	probe := bwrap.Probe(ctx)
	switch {
	case probe == nil:
		p.Tier = "C"
		return "", nil
	case os.Geteuid() == 0:
		p.Tier = "B"
		return fmt.Sprintf("process.run runs in tier B (a uid per run, rlimits, seccomp; no namespaces): tier C needs bubblewrap (%v)", probe), nil
	}
	return "", fmt.Errorf("process_run.tier auto: tier C needs bubblewrap (%v), and tier B a root daemon (this one is uid %d); install bubblewrap, or set process_run.enabled = false (EXECLEDGER_PROCESS_RUN_ENABLED=false)", probe, os.Geteuid())
}

// processTools builds process.run, and process.status and process.stop
// when background processes are on.
func processTools(ctx context.Context, p config.Process, pool *pgxpool.Pool, logger *slog.Logger) ([]executor.Tool, *processrun.Tool, error) {
	warn, err := resolveTier(ctx, &p)
	if err != nil {
		return nil, nil, err
	}
	if warn != "" {
		logger.Warn(warn)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("process_run: %w", err)
	}
	root, err := filepath.Abs(p.WorkspaceRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("process_run.workspace_root: %w", err)
	}
	private, err := prefixes("process_run.egress_private_ranges", p.EgressPrivateRanges)
	if err != nil {
		return nil, nil, err
	}
	var bg processrun.BackgroundConfig
	if p.Background {
		bg = processrun.BackgroundConfig{Recorder: ledger.NewProcesses(pool), MaxProcesses: p.MaxBackground, MaxPerRun: p.MaxBackgroundPerRun,
			Logger: logger.With(slog.String("component", "process.run"))}
	}
	pr, err := processrun.New(processrun.Config{
		Tier: p.Tier, Self: self, WorkspaceRoot: root,
		Policy: procinput.Policy{AllowedExecutables: p.AllowedExecutables, AllowInterpreters: p.AllowInterpreters,
			AllowDetached: p.AllowDetached, MaxBackgroundLifetime: p.MaxBackgroundLifetime.Duration,
			EgressMode: p.EgressMode, EgressAllowlist: p.EgressAllowlist, MaxTimeout: p.MaxTimeout.Duration},
		Background: bg, Cgroups: p.Cgroups, UIDBase: uint32(p.UIDBase), UIDCount: uint32(p.UIDCount),
		Limits: procinit.Limits{CPUSeconds: uint64(p.RlimitCPUSeconds), AddressSpace: uint64(p.RlimitAddressSpace),
			FileSize: uint64(p.RlimitFileSize), OpenFiles: uint64(p.RlimitOpenFiles), Processes: uint64(p.RlimitProcesses)},
		OutputLimit: p.OutputLimitBytes, KillGrace: p.KillGrace.Duration, UID: uint32(p.UID), GID: uint32(p.GID),
		EgressPorts: p.EgressPorts, EgressPrivateRanges: private,
		Workspaces: processrun.WorkspaceConfig{TTL: p.WorkspaceTTL.Duration, SweepInterval: p.WorkspaceSweepInterval.Duration,
			Activity: processrun.NewLedgerActivity(pool), Logger: logger.With(slog.String("component", "process.run"))},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("process_run: %w", err)
	}
	logger.Info("process.run", slog.String("tier", p.Tier), slog.Any("allowed_executables", p.AllowedExecutables))
	tools := []executor.Tool{pr}
	if st := pr.StatusTool(); st != nil {
		tools = append(tools, st, pr.StopTool())
	}
	// Tier B processes of dead executors that escaped their init (setsid,
	// double fork) are still in their cgroup leaves.
	orphans, err := pr.SweepOrphans(ctx)
	if err != nil {
		logger.Warn("process.run: sweeping orphaned cgroups", slog.Any("error", err))
	}
	for _, o := range orphans {
		logger.Warn("process.run: killed the processes of a dead executor", slog.String("owner", o.Owner),
			slog.String("leaf", o.Leaf), slog.Int("processes", len(o.PIDs)))
	}
	return tools, pr, nil
}
