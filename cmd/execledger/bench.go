package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/bench"
)

// benchFlags are bench's flags.
type benchFlags struct {
	mode, system                string
	n, submitters, workers      int
	duration, riverCooldown     time.Duration
	rate                        float64
	keep, noProjector, noSealer bool
	cpuProfile, traceFile       string
	claimBatch, completeBatch   int
	auditChains                 int
	workSettings                map[string]string
	privateCluster              string
	pgSettings                  []string
}

func newBenchCmd(e *env) *cobra.Command {
	f := benchFlags{workSettings: map[string]string{}}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency against River on fresh databases",
		Long: `Bench measures end-to-end throughput and submit-to-final latency on a fresh database on
DATABASE_URL's server, with River as the same-run baseline: it runs the baselines first, then
Execledger, and prints the ratios. The baselines are River with a no-op worker (river) and
River where each job also appends its state changes to an insert-only audit table chained by
SHA-256 and signs its outcome with Ed25519 (river-audited), whose audit log is verified after
the run. --system takes execledger, river, river-audited, both (river and execledger), all,
or a comma-separated list. Execledger runs the projection engine and the sealer beside its
executor, as serve does (--no-projector, --no-sealer: without them).

River is linked only into a binary built with -tags river (make bench builds one); without
it, every system but execledger is a usage error. docs/benchmarks.md has the method.`,
		Example: `  execledger bench --system execledger --mode burndown --n 20000
  execledger bench --system all --mode continuous --duration 20s --json
  execledger bench --system river-audited,execledger --n 5000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.mode, "mode", bench.ModeBurndown, "burndown (insert N, then drain) or continuous (insert and work at once for --duration)")
	// All where River is linked (make bench), else Execledger alone: a
	// plain build's bench runs as it is instead of failing on its default.
	fl.StringVar(&f.system, "system", bench.DefaultSystem, "execledger, river, river-audited, both (river and execledger), all, or a comma-separated list; baselines first, then the ratios; all when River is linked (-tags river), else execledger")
	fl.IntVar(&f.n, "n", 20000, "burndown: requests inserted before the workers start")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "continuous: how long to submit")
	fl.Float64Var(&f.rate, "rate", 0, "continuous: the offered load in requests/s on a fixed schedule, whether or not the system keeps up (0: as fast as the submitters can)")
	fl.IntVar(&f.submitters, "submitters", 8, "concurrent submitting connections")
	fl.IntVar(&f.workers, "workers", 64, "executor workers and claim batch; River queue MaxWorkers")
	e.jsonFlag(cmd, "print the report as JSON (progress goes to stderr)")
	fl.BoolVar(&f.keep, "keep", false, "keep the benchmark databases instead of dropping them")
	fl.BoolVar(&f.noProjector, "no-projector", false, "run the executor without the read models' projection engine that serve runs beside it")
	fl.BoolVar(&f.noSealer, "no-sealer", false, "run the executor without the Merkle log's sealer that serve runs beside it")
	fl.StringVar(&f.privateCluster, "private-cluster", "",
		"start a PostgreSQL server of the benchmark's own in `DIR` (initdb'd when empty; run as the postgres user when root) "+
			"instead of DATABASE_URL's, and count its CPU per request")
	fl.StringArrayVar(&f.pgSettings, "pg-setting", nil,
		"with --private-cluster: a server setting `NAME=VALUE` (repeatable), e.g. autovacuum=off")
	fl.DurationVar(&f.riverCooldown, "river-fetch-cooldown", bench.DefaultRiverFetchCooldown,
		"River's FetchCooldown; River's own default, 100ms, caps a queue at 10 fetches a second")
	fl.IntVar(&f.auditChains, "audit-chains", bench.DefaultAuditChains,
		"river-audited: the SHA-256 chains its audit table is striped over (job id mod N), each appended under a lock held until commit")
	e.configFlag(cmd)
	// Hidden: tools for whoever digs into the figures.
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
	fl.IntVar(&f.claimBatch, "claim-batch", 0, "executor ClaimBatch (0: --workers)")
	fl.IntVar(&f.completeBatch, "complete-batch", 0, "executor CompleteBatch (0: the executor's default)")
	fl.Func("work-setting", "a PostgreSQL `NAME=VALUE` for the workers' connections (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return errors.New("want NAME=VALUE")
		}
		f.workSettings[k] = val
		return nil
	})
	fl.StringVar(&f.traceFile, "trace", "", "write an execution trace of the whole run to `FILE` (go tool trace)")
	for _, name := range []string{"cpuprofile", "claim-batch", "complete-batch", "work-setting", "trace"} {
		if err := fl.MarkHidden(name); err != nil {
			panic(err)
		}
	}
	enumFlag(cmd, "mode", bench.ModeBurndown, bench.ModeContinuous)
	enumFlag(cmd, "system", bench.SystemNames...)
	return cmd
}

func runBench(ctx context.Context, e *env, f benchFlags) error {
	conf, err := e.loadConfig(e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	cfg := bench.Config{
		AdminURL: conf.Database.URL, Mode: f.mode, System: f.system, N: f.n, Duration: f.duration, Rate: f.rate,
		Submitters: f.submitters, Workers: f.workers, Keep: f.keep, NoProjector: f.noProjector, NoSealer: f.noSealer,
		RiverFetchCooldown: f.riverCooldown, AuditChains: f.auditChains, ClaimBatch: f.claimBatch, CompleteBatch: f.completeBatch, WorkSettings: f.workSettings,
		Progress: e.io.out, Logger: slog.New(slog.NewTextHandler(e.io.err, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if e.json {
		cfg.Progress = e.io.err
	}
	if len(f.pgSettings) > 0 && f.privateCluster == "" {
		return fail(exitUsage, "--pg-setting needs --private-cluster")
	}
	for _, s := range f.pgSettings {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return fail(exitUsage, "--pg-setting %q: want NAME=VALUE", s)
		}
	}
	if f.privateCluster != "" {
		url, pid, stop, err := startBenchCluster(ctx, f.privateCluster, f.pgSettings, cfg.Logger)
		if err != nil {
			return err
		}
		defer stop()
		cfg.AdminURL, cfg.PostmasterPID = url, pid
		fmt.Fprintf(cfg.Progress, "private cluster %s (postmaster %d), settings %v\n", f.privateCluster, pid, f.pgSettings)
	}
	if cfg.AdminURL == "" {
		return fail(exitError, "%v", errNoDatabase)
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		defer stop()
	}
	if f.traceFile != "" {
		stop, err := startTrace(f.traceFile)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		defer stop()
	}
	return benchReport(ctx, e, cfg, e.json)
}

func benchReport(ctx context.Context, e *env, cfg bench.Config, asJSON bool) error {
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return fail(exitError, "interrupted")
		}
		return fail(exitError, "%v", err)
	}
	if asJSON {
		if err := printJSON(e, report); err != nil {
			return err
		}
	} else {
		report.Print(e.io.out)
	}
	if err := report.Check(); err != nil {
		return fail(exitError, "%v", err)
	}
	return nil
}

func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func startTrace(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: %w", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}
