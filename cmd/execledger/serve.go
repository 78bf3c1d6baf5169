package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/opsserver"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/internal/skill/audit"
	"github.com/execledger/execledger/internal/skill/gate"
	"github.com/execledger/execledger/internal/skill/vet"
	"github.com/execledger/execledger/internal/tracing"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

func newServeCmd(e *env) *cobra.Command {
	var withConsole bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the executor and the operations endpoints against DATABASE_URL",
		Long: `Serve runs the executor loops, the projection engine and the Merkle log's sealer, and the
operations endpoints /healthz, /readyz and /metrics ([serve] listen). It refuses an
unmigrated database, a missing policy or a missing key. --console (or [console] enabled) serves
the web console too, as execledger console does. SIGINT or SIGTERM stops it.`,
		Example: `  DATABASE_URL=postgres://execledger@db/execledger execledger serve --config /etc/execledger.toml
  EXECLEDGER_SERVE_LISTEN=127.0.0.1:9090 execledger serve`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), e, withConsole)
		},
	}
	cmd.Flags().BoolVar(&withConsole, "console", false, "serve the web console too, on console.listen")
	e.configFlag(cmd)
	return cmd
}

func runServe(ctx context.Context, e *env, withConsole bool) error {
	cfg, err := e.loadConfig(e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	cfg.Console.Enabled = cfg.Console.Enabled || withConsole
	logger := e.logger(cfg)
	var svc services
	if cfg.Executor.Enabled {
		if svc, err = loadServices(cfg); err != nil {
			return fail(exitError, "%v", err)
		}
	}
	tp, stopTracing, err := e.startTracing(ctx, logger)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer stopTracing()
	svc.tracing = tp
	pool, err := openPool(ctx, cfg, tracePool(tp))
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	if err := serve(ctx, cfg, pool, logger, svc); err != nil {
		return fail(exitError, "%v", err)
	}
	return nil
}

// services is what the executor needs besides the database.
type services struct {
	policy *policy.Engine
	signer *attest.Signer
	// note signs the Merkle log's checkpoints (nil: none are signed);
	// witnesses publish them.
	note      note.Signer
	witnesses []note.Verifier
	// tracing receives a trace per request (nil: tracing is off).
	tracing *tracing.Provider
	// noteKeyFile is the log's note key file when it is not
	// sealer.note_key_file (dev's generated one): the console reads its
	// .pub to check checkpoints.
	noteKeyFile string
	// consoleReady, when set, gets the console's URL once it listens.
	consoleReady func(url string)
	// opsListener and consoleListener, when set, are serve.listen and
	// console.listen bound already (dev binds them before its banner).
	opsListener, consoleListener net.Listener
}

// loadServices reads the policy files and the signing key. Both are
// required: an executor never runs without a policy or unsigned.
func loadServices(cfg config.Config) (services, error) {
	if len(cfg.Policy.Files) == 0 {
		return services{}, errors.New("policy.files: name at least one Cedar policy file (EXECLEDGER_POLICY_FILES); without one nothing could be authorized")
	}
	pol, err := policy.Load(cfg.Policy.Files...)
	if err != nil {
		return services{}, err
	}
	if cfg.Attest.KeyFile == "" {
		return services{}, errors.New("attest.key_file: name the Ed25519 signing key (EXECLEDGER_ATTEST_KEY_FILE); `execledger keygen` writes one")
	}
	signer, err := attest.LoadSigner(cfg.Attest.KeyFile)
	if err != nil {
		return services{}, err
	}
	svc := services{policy: pol, signer: signer}
	if err := svc.loadLogKeys(cfg.Sealer, cfg.Sealer.NoteKeyFile); err != nil {
		return services{}, err
	}
	return svc, nil
}

// loadLogKeys reads the log's note key (from noteKey, "" for none) and the
// witness keys.
func (svc *services) loadLogKeys(cfg config.Sealer, noteKey string) error {
	if noteKey != "" {
		s, err := ledger.LoadNoteSigner(noteKey)
		if err != nil {
			return fmt.Errorf("sealer.note_key_file: %w", err)
		}
		svc.note = s
	}
	for _, f := range cfg.WitnessKeys {
		v, err := ledger.LoadWitnessVerifier(f)
		if err != nil {
			return fmt.Errorf("sealer.witness_keys: %w", err)
		}
		svc.witnesses = append(svc.witnesses, v)
	}
	return nil
}

// serve runs the service until ctx ends: the operations endpoints and,
// when enabled, the executor and the projection engine.
func serve(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger, svc services) error {
	if err := checkSchema(ctx, pool); err != nil {
		return err
	}
	logger.Info("serving", slog.String("label", cfg.Serve.Label), slog.String("database", redactURL(cfg.Database.URL)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	ops := opsserver.New(pool, logger, opsserver.Config{QuotaTopK: cfg.Serve.QuotaMetricsTopK, Label: cfg.Serve.Label})
	if cfg.Serve.Listen != "" {
		wg.Go(func() {
			ready := func(a net.Addr) {
				logger.Info("operations endpoints", slog.String("healthz", "http://"+a.String()+"/healthz"),
					slog.String("metrics", "http://"+a.String()+"/metrics"))
			}
			var err error
			if svc.opsListener != nil {
				err = ops.ServeListener(ctx, svc.opsListener, ready)
			} else {
				err = ops.Serve(ctx, cfg.Serve.Listen, ready)
			}
			if err != nil {
				errs <- err
				cancel()
			}
		})
	}
	if cfg.Console.Enabled {
		keys, err := consoleKeys(cfg, svc.signer, svc.noteKeyFile, logger)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if err := runConsole(ctx, cfg, keys, logger, svc.consoleReady, svc.consoleListener); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		})
	}
	if cfg.Executor.Enabled {
		xcfg := executorConfig(cfg)
		xcfg.Metrics = executor.NewMetrics(ops.Registerer())
		xcfg.UnsupportedHint = unsupportedHint(cfg)
		if svc.tracing != nil {
			xcfg.TracerProvider = svc.tracing
		}
		tools, closers, host, err := toolsFor(ctx, cfg, pool, logger)
		if err != nil {
			return err
		}
		if host != nil && cfg.Skills.Enabled {
			opts, limits := skillOptions(cfg), skillLimits(cfg.Wasm)
			// The audit before a skill's first call compiles into the
			// host's cache_dir, where building the skill's tool next
			// finds the machine code instead of compiling it again.
			opts.Wasm.CacheDir = host.CacheDir()
			g := gate.New(host, opts, limits, logger)
			xcfg.Skills = g
			closers = append(closers, toolCloser{"skills", g.Close})
			wg.Go(func() { gate.Run(ctx, pool, opts, cfg.Skills.ReauditInterval.Duration, 30*time.Second, logger) })
		}
		// After the executor has stopped: background processes end and
		// their ends are recorded, WebAssembly runtimes are freed.
		defer closeTools(context.WithoutCancel(ctx), cfg, logger, closers)
		x, err := executor.New(pool, xcfg, svc.policy, svc.signer, logger, tools...)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if err := x.Run(ctx); err != nil {
				errs <- err
				cancel()
			}
		})
		if cfg.Policy.ReloadInterval.Duration > 0 && len(cfg.Policy.Files) > 0 {
			w := policy.Watcher{Paths: cfg.Policy.Files, Interval: cfg.Policy.ReloadInterval.Duration,
				Logger: logger.With(slog.String("component", "policy")), Apply: x.SetPolicy}
			wg.Go(func() { w.Run(ctx, svc.policy) })
		}
	}
	if projections := engineProjections(cfg, svc, ops.Registerer(), logger); len(projections) > 0 {
		eng, err := projector.New(pool, projector.Config{
			BatchSize: cfg.Projector.BatchSize, PollInterval: cfg.Projector.PollInterval.Duration,
			Registerer: ops.Registerer(), Logger: logger,
		}, projections...)
		if err != nil {
			return err
		}
		// Run returns only when ctx ends: database errors are retried.
		wg.Go(func() { _ = eng.Run(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

// engineProjections are what serve's projection engine runs: the read
// models when [projector] is enabled, the Merkle log's sealer when
// [sealer] is.
func engineProjections(cfg config.Config, svc services, reg prometheus.Registerer, logger *slog.Logger) []projector.Projection {
	var ps []projector.Projection
	if cfg.Projector.Enabled {
		ps = append(ps, projector.ReadModels()...)
	}
	if cfg.Sealer.Enabled {
		if svc.note == nil {
			logger.Warn("the Merkle log's sealer signs no checkpoint: no sealer.note_key_file (execledger keygen --note writes one)")
		}
		s := ledger.NewSealer(ledger.SealerConfig{
			Signer: svc.note, CheckpointEvery: cfg.Sealer.CheckpointEvery, CheckpointInterval: cfg.Sealer.CheckpointInterval.Duration,
			Witnesses: svc.witnesses, Quorum: cfg.Sealer.WitnessQuorum, AuditInterval: cfg.Sealer.AuditInterval.Duration,
			Registerer: reg, Logger: logger.With(slog.String("component", "sealer")),
		})
		p := projector.Sealer(s)
		p.BatchSize = cfg.Sealer.BatchSize
		ps = append(ps, p)
	}
	return ps
}

// unsupportedHint says, for a tool this executor does not run, which
// configuration key would make it run it.
func unsupportedHint(cfg config.Config) func(tool string) string {
	return func(tool string) string {
		switch {
		case tool == "process.run" || tool == "process.status" || tool == "process.stop":
			if !cfg.Process.Enabled {
				return "process.run is off: set [process_run] enabled = true (EXECLEDGER_PROCESS_RUN_ENABLED=true; execledger dev turns it on)"
			}
			if !cfg.Process.Background {
				return "background processes are off: set [process_run] background = true (EXECLEDGER_PROCESS_RUN_BACKGROUND=true)"
			}
		case !strings.Contains(tool, "."):
			return "the built-in tools are echo and sleep"
		case !cfg.Wasm.Enabled:
			return "skills and WebAssembly modules run in tier A, which is off: set [wasm] enabled = true (EXECLEDGER_WASM_ENABLED=true; execledger dev turns it on)"
		case tool == "plugin.run" && !cfg.Wasm.AllowInline:
			return "plugin.run is off: set [wasm] allow_inline = true (EXECLEDGER_WASM_ALLOW_INLINE=true)"
		case !cfg.Skills.Enabled:
			return "no [[wasm.modules]] entry registers it, and installed skills are off: set [skills] enabled = true (EXECLEDGER_SKILLS_ENABLED=true)"
		default:
			return "no [[wasm.modules]] entry registers it and no installed skill provides it (execledger skill list)"
		}
		return ""
	}
}

// toolCloser closes a family of tools after the executor has stopped.
type toolCloser struct {
	name  string
	close func(context.Context) error
}

// closeTools closes the tool families in the reverse of their opening.
func closeTools(ctx context.Context, cfg config.Config, logger *slog.Logger, closers []toolCloser) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Executor.ShutdownGrace.Duration+10*time.Second)
	defer cancel()
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i].close(ctx); err != nil {
			logger.Error(closers[i].name+": closing", slog.Any("error", err))
		}
	}
}

// toolsFor is the executor's tool set: the built-ins; process.run (with
// process.status and process.stop when background processes are on) when
// configured; and the tier A tools of [wasm] when enabled. The closers
// are to be called after the executor stops; process.run has already
// accounted for the processes of dead executors on this host.
func toolsFor(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) ([]executor.Tool, []toolCloser, *wasmrun.Host, error) {
	tools := []executor.Tool{executor.Echo{}, executor.Sleep{}}
	var closers []toolCloser
	if cfg.Process.Enabled {
		pt, pr, err := processTools(ctx, cfg.Process, pool, logger)
		if err != nil {
			return nil, nil, nil, err
		}
		tools = append(tools, pt...)
		closers = append(closers, toolCloser{"process.run", pr.Close})
	}
	var host *wasmrun.Host
	if cfg.Wasm.Enabled {
		wt, h, err := wasmTools(ctx, cfg.Wasm, pool)
		if err != nil {
			closeTools(context.WithoutCancel(ctx), cfg, logger, closers)
			return nil, nil, nil, err
		}
		tools = append(tools, wt...)
		closers = append(closers, toolCloser{"wasm", h.Close})
		host = h
		logger.Info("tier A", slog.Int("modules", len(cfg.Wasm.Modules)), slog.Bool("allow_inline", cfg.Wasm.AllowInline),
			slog.Bool("installed_skills", cfg.Skills.Enabled))
	}
	return tools, closers, host, nil
}

// wasmTools builds the tier A host: every registered module is read,
// checked against its pinned digest and compiled before serve starts.
// Calls are granted what both [wasm]'s policy and their module's
// capabilities list; secrets come from secrets_dir or secrets_env_prefix,
// storage is ledger.skill_storage through pool.
func wasmTools(ctx context.Context, w config.Wasm, pool *pgxpool.Pool) ([]executor.Tool, *wasmrun.Host, error) {
	mods := make([]wasmrun.Module, len(w.Modules))
	for i, m := range w.Modules {
		path, err := filepath.Abs(m.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("wasm.modules[%d].path: %w", i, err)
		}
		c := m.Capabilities
		mods[i] = wasmrun.Module{ToolID: m.Tool, Path: path, SHA256: m.SHA256, Entrypoint: m.Entrypoint,
			FuelLimit: int64(m.FuelLimit), Timeout: m.Timeout.Duration,
			Capabilities: wasmrun.Capabilities{HTTPHosts: c.HTTPHosts, Secrets: c.Secrets,
				StoragePrefixes: c.StoragePrefixes, Channels: c.Channels}}
	}
	cacheDir := w.CacheDir
	if cacheDir != "" {
		var err error
		if cacheDir, err = filepath.Abs(cacheDir); err != nil {
			return nil, nil, fmt.Errorf("wasm.cache_dir: %w", err)
		}
	}
	var secrets wasmrun.SecretProvider
	switch {
	case w.SecretsDir != "":
		dir, err := filepath.Abs(w.SecretsDir)
		if err != nil {
			return nil, nil, fmt.Errorf("wasm.secrets_dir: %w", err)
		}
		secrets = wasmrun.DirSecrets{Dir: dir}
	case w.SecretsEnvPrefix != "":
		secrets = wasmrun.EnvSecrets{Prefix: w.SecretsEnvPrefix}
	}
	private, err := prefixes("wasm.http_private_ranges", w.HTTPPrivateRanges)
	if err != nil {
		return nil, nil, err
	}
	wc := wasmLimits(w)
	wc.Modules, wc.AllowInline, wc.CacheDir = mods, w.AllowInline, cacheDir
	wc.Secrets, wc.Storage = secrets, wasmrun.PGStorage{Pool: pool}
	wc.HTTP = wasmrun.HTTPOptions{Ports: w.HTTPPorts, PrivateRanges: private}
	h, err := wasmrun.New(ctx, wc)
	if err != nil {
		return nil, nil, fmt.Errorf("wasm: %w", err)
	}
	var tools []executor.Tool
	for _, t := range h.Tools() {
		tools = append(tools, t)
	}
	return tools, h, nil
}

// wasmLimits is tier A's engine, limits and policy from [wasm]: what a
// host is built with, and what the skill audit checks modules against.
func wasmLimits(w config.Wasm) wasmrun.Config {
	return wasmrun.Config{Engine: w.Engine, MemoryLimitPages: uint32(w.MemoryLimitPages), FuelLimit: int64(w.FuelLimit),
		MaxInstances: w.MaxInstances, MaxModuleBytes: w.MaxModuleBytes, Timeout: w.Timeout.Duration,
		Policy: wasmrun.Capabilities{HTTPHosts: w.PolicyHTTPHosts, Secrets: w.PolicySecrets,
			StoragePrefixes: w.PolicyStoragePrefixes, Channels: w.PolicyChannels}}
}

// skillOptions is the configuration's part in a skill's audit: the most
// it may request is [wasm]'s policy.
func skillOptions(cfg config.Config) vet.Options {
	w := cfg.Wasm
	return vet.Options{Wasm: wasmLimits(w), Max: audit.Max{HTTPHosts: w.PolicyHTTPHosts, Secrets: w.PolicySecrets,
		StoragePrefixes: w.PolicyStoragePrefixes, Channels: w.PolicyChannels, AllowWildcards: cfg.Skills.AllowWildcards}}
}

// skillLimits bound installed skills' quotas.
func skillLimits(w config.Wasm) gate.Limits { return gate.LimitsOf(w) }

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

func executorConfig(cfg config.Config) executor.Config {
	x := cfg.Executor
	return executor.Config{
		Label: cfg.Serve.Label, Workers: x.Workers, ClaimBatch: x.ClaimBatch, Lease: x.Lease.Duration,
		PollInterval: x.PollInterval.Duration, RescueInterval: x.RescueInterval.Duration,
		ShutdownGrace: x.ShutdownGrace.Duration, ToolTimeout: x.ToolTimeout.Duration,
		DefaultMaxCallsPerRun: x.DefaultMaxCallsPerRun, Sensitive: x.Sensitive, ApprovalTimeout: x.ApprovalTimeout.Duration,
		MaxAttempts: x.MaxAttempts,
	}
}

// prefixes parses the CIDR ranges of configuration key key (already
// validated by config.Load, so an error here is a program error).
func prefixes(key string, ranges []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ranges))
	for _, r := range ranges {
		pr, err := netip.ParsePrefix(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, pr)
	}
	return out, nil
}
