package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/execledger/execledger/internal/bench"
)

const benchUsage = "usage: execledger bench [--mode continuous|burndown] [--system execledger|river|both] [--n N] [--duration D] [--submitters S] [--workers W] [--json] [--keep] [--river-fetch-cooldown D]"

func runBench(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "bench")
	mode := fs.String("mode", bench.ModeBurndown, "burndown (insert N, then drain) or continuous (insert and work at once for --duration)")
	system := fs.String("system", bench.SystemBoth, "execledger, river, or both (River first; prints the ratio execledger/river)")
	n := fs.Int("n", 20000, "burndown: requests inserted before the workers start")
	duration := fs.Duration("duration", 30*time.Second, "continuous: how long to submit")
	submitters := fs.Int("submitters", 8, "concurrent submitting connections")
	workers := fs.Int("workers", 64, "executor workers and claim batch; River queue MaxWorkers")
	asJSON := fs.Bool("json", false, "print the report as JSON (progress goes to stderr)")
	keep := fs.Bool("keep", false, "keep the benchmark databases instead of dropping them")
	noProjector := fs.Bool("no-projector", false, "run the executor without the read models' projection engine that serve runs beside it")
	noSealer := fs.Bool("no-sealer", false, "run the executor without the Merkle log's sealer that serve runs beside it")
	riverCooldown := fs.Duration("river-fetch-cooldown", bench.DefaultRiverFetchCooldown,
		"River's FetchCooldown; River's own default, 100ms, caps a queue at 10 fetches a second")
	// Not in the usage: tools for whoever digs into the figures.
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
	claimBatch := fs.Int("claim-batch", 0, "executor ClaimBatch (0: --workers)")
	completeBatch := fs.Int("complete-batch", 0, "executor CompleteBatch (0: the executor's default)")
	workSettings := map[string]string{}
	fs.Func("work-setting", "a PostgreSQL `NAME=VALUE` for the workers' connections (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return errors.New("want NAME=VALUE")
		}
		workSettings[k] = val
		return nil
	})
	traceFile := fs.String("trace", "", "write an execution trace of the whole run to `FILE` (go tool trace)")

	fs.Usage = func() { benchFlagUsage(e, fs) }
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 0 {
		return e.fail(exitUsage, benchUsage)
	}
	conf, err := e.loadConfig(*cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	cfg := bench.Config{
		AdminURL: conf.Database.URL, Mode: *mode, System: *system, N: *n, Duration: *duration,
		Submitters: *submitters, Workers: *workers, Keep: *keep, NoProjector: *noProjector, NoSealer: *noSealer, RiverFetchCooldown: *riverCooldown,
		ClaimBatch: *claimBatch, CompleteBatch: *completeBatch, WorkSettings: workSettings,
		Progress: e.io.out, Logger: slog.New(slog.NewTextHandler(e.io.err, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if *asJSON {
		cfg.Progress = e.io.err
	}
	if cfg.AdminURL == "" {
		return e.fail(exitError, "%v", errNoDatabase)
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return e.fail(exitUsage, "%v\n%s", err, benchUsage)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return e.fail(exitError, "%v", err)
		}
		defer stop()
	}
	if *traceFile != "" {
		stop, err := startTrace(*traceFile)
		if err != nil {
			return e.fail(exitError, "%v", err)
		}
		defer stop()
	}
	return benchReport(ctx, e, cfg, *asJSON)
}

func benchReport(ctx context.Context, e *env, cfg bench.Config, asJSON bool) int {
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return e.fail(exitError, "interrupted")
		}
		return e.fail(exitError, "%v", err)
	}
	if asJSON {
		if code := printJSON(e, report); code != exitOK {
			return code
		}
	} else {
		report.Print(e.io.out)
	}
	if err := report.Check(); err != nil {
		return e.fail(exitError, "%v", err)
	}
	return exitOK
}

// benchFlagUsage prints the flags, leaving out the hidden ones.
func benchFlagUsage(e *env, fs *flag.FlagSet) {
	fmt.Fprintln(e.io.err, benchUsage)
	hidden := map[string]bool{"cpuprofile": true, "trace": true, "claim-batch": true, "complete-batch": true, "work-setting": true}
	fs.VisitAll(func(f *flag.Flag) {
		if !hidden[f.Name] {
			name, usage := flag.UnquoteUsage(f)
			if f.DefValue != "" && f.DefValue != "false" {
				usage += " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(e.io.err, "  --%s %s\n    \t%s\n", f.Name, name, usage)
		}
	})
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
