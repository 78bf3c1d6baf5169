package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/retry"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
)

// Executor runs requests. Several executors, in one process or many, may
// share a database: claims never overlap. It wires the services the
// package documentation lists.
type Executor struct {
	cfg    Config
	pool   *pgxpool.Pool
	store  *ledger.Store
	policy *policyRef
	logger *slog.Logger

	claimer   *claimer
	runner    *runner
	completer *completer
	heartbeat *heartbeat
	listener  *listener
	rescuer   *rescuer

	hooks *testHooks
}

// New returns an Executor running the given tools.
func New(pool *pgxpool.Pool, cfg Config, pol *policy.Engine, signer *attest.Signer, logger *slog.Logger, tools ...Tool) (*Executor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pol == nil || signer == nil {
		return nil, errors.New("executor: a policy engine and a signer are required")
	}
	ts, err := newToolSet(tools, cfg.Sensitive)
	if err != nil {
		return nil, err
	}
	logger = logger.With(slog.String("component", "executor"), slog.String("executor", cfg.Label))
	var tr tracing
	if cfg.TracerProvider != nil {
		tr.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	store := ledger.NewStore(pool)
	pr := &policyRef{}
	pr.p.Store(pol)
	rec := &recorder{pool: pool, store: store, signer: signer, policy: pr, label: cfg.Label,
		approvalTimeout: cfg.ApprovalTimeout, logger: logger}
	hooks := &testHooks{}
	outcomes := make(chan outcome, cfg.Workers)
	run := newRunner(cfg.Workers, cfg.ToolTimeout, outcomes)
	run.tools, run.metrics, run.tracing, run.logger, run.hooks = ts, cfg.Metrics, tr, logger, hooks
	cl := &claimer{cfg: cfg, rec: rec, policy: pr, tools: ts, runner: run, metrics: cfg.Metrics, tracing: tr, logger: logger,
		wake: make(chan struct{}, 1), hooks: hooks}
	run.freed = cl.poke
	hb := &heartbeat{pool: pool, lease: cfg.Lease, claims: run, logger: logger}
	return &Executor{
		cfg: cfg, pool: pool, store: store, policy: pr, logger: logger,
		claimer: cl,
		runner:  run,
		completer: &completer{rec: rec, batchSize: cfg.CompleteBatch, in: outcomes, jobs: run, tools: ts, metrics: cfg.Metrics,
			tracing: tr, logger: logger, hooks: hooks},
		heartbeat: hb,
		listener:  &listener{pool: pool, logger: logger, pending: cl.notified, cancel: hb.readCancelFlags},
		rescuer: &rescuer{rec: rec, tools: ts, interval: cfg.RescueInterval, maxAttempts: cfg.MaxAttempts, metrics: cfg.Metrics,
			logger: logger, requeued: cl.poke},
		hooks: hooks,
	}, nil
}

// Run claims and runs requests until ctx ends, then stops claiming (a
// claim in progress is finished and handed to the runner, see
// claimer.claim), lets running calls finish for up to ShutdownGrace, stops
// the rest and records why, and returns once every outcome is written: it
// returns holding no claim (docs/chaos.md, "Graceful stop").
func (e *Executor) Run(ctx context.Context) error {
	if err := e.startup(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var wg sync.WaitGroup
	completerDone := make(chan struct{})
	go func() {
		defer close(completerDone)
		e.completer.run(bg)
	}()
	wg.Go(func() { e.listener.run(bg) })
	wg.Go(func() { e.heartbeat.run(bg) })
	wg.Go(func() { e.rescuer.run(bg) })

	e.logger.Info("executor started", slog.Int("workers", e.cfg.Workers), slog.String("policy_digest", e.policy.load().Digest()))
	e.claimer.run(ctx)
	e.runner.shutdown(e.cfg.ShutdownGrace)
	close(e.completer.in)
	<-completerDone
	if _, uerr := e.pool.Exec(bg, queryUnregisterWaiter, e.cfg.Label); uerr != nil {
		e.logger.Warn("unregister waiter", slog.Any("error", uerr))
	}
	stopBG()
	wg.Wait()
	e.logger.Info("executor stopped")
	return nil
}

// startup publishes the policy, waiting out a database that is away (a
// restart, a failover: the connection is cut or refused) with backoff
// rather than exiting: an executor started while PostgreSQL restarts
// would otherwise never run. Other errors end it.
func (e *Executor) startup(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := e.publishPolicy(ctx, e.policy.load())
		if err == nil || ctx.Err() != nil || !contract.DatabaseAway(err) {
			return err
		}
		e.logger.Warn("database unavailable at startup; retrying", slog.Any("error", err), slog.Duration("retry_in", backoff))
		retry.Sleep(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// publishPolicy appends policy.published when the loaded policy set is not
// the one the log last recorded.
func (e *Executor) publishPolicy(ctx context.Context, pol *policy.Engine) error {
	for attempt := 0; attempt < 5; attempt++ {
		var last *string
		err := e.pool.QueryRow(ctx, queryLastPolicyDigest).Scan(&last)
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("executor: read policy digest: %w", err)
		}
		if last != nil && *last == pol.Digest() {
			return nil
		}
		files := []map[string]string{}
		for _, s := range pol.Sources() {
			files = append(files, map[string]string{"name": s.Name, "text": string(s.Text)})
		}
		_, err = e.store.Append(ctx, "policy", ledger.AnyVersion, ledger.NewEvent{
			Type:     "policy.published",
			Payload:  map[string]any{"policy_digest": pol.Digest(), "policy_ids": pol.PolicyIDs(), "files": files},
			Metadata: ledger.Metadata{Actor: e.cfg.Label},
		})
		if errors.Is(err, ledger.ErrConcurrency) {
			continue
		}
		if err != nil {
			return fmt.Errorf("executor: publish policy: %w", err)
		}
		e.logger.Info("policy published", slog.String("policy_digest", pol.Digest()))
		return nil
	}
	return errors.New("executor: publish policy: too many concurrent publishers")
}
