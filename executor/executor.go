// Package executor turns pending requests into final ones: it claims them
// in batches under a lease, authorizes each (input caps, per-run budget,
// Cedar policy, tool support, approval) in the claim's own transaction, runs
// it, and completes batches of outcomes with a signed attestation each.
// Every step is an event. Expired leases are rescued: a request that had not
// started, or whose tool is safe to repeat, runs again; any other ends
// failed with error_kind outcome_unknown.
package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
)

// Executor runs requests. Several executors, in one process or many, may
// share a database: claims never overlap.
type Executor struct {
	cfg       Config
	pool      *pgxpool.Pool
	store     *ledger.Store
	policy    *policy.Engine
	signer    *attest.Signer
	tools     map[string]Tool
	sensitive map[string]bool
	logger    *slog.Logger
	metrics   *Metrics
	tracer    trace.Tracer // nil: tracing off (trace.go)

	slots    chan struct{} // one token per running call
	outcomes chan outcome  // finished calls, to the completer
	wake     chan struct{} // a NOTIFY or a free slot: try to claim

	mu       sync.Mutex
	inflight map[uuid.UUID]*job // claimed and not yet completed

	logHead logHead // the newest checkpoint, for attestations

	// skillTools are the tool ids installed skills have served (the
	// Skills' answers): metrics name them rather than "unknown".
	skillTools sync.Map
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
	e := &Executor{
		cfg: cfg, pool: pool, store: ledger.NewStore(pool), policy: pol, signer: signer,
		tools: map[string]Tool{}, sensitive: map[string]bool{},
		logger:   logger.With(slog.String("component", "executor"), slog.String("executor", cfg.Label)),
		metrics:  cfg.Metrics,
		slots:    make(chan struct{}, cfg.Workers),
		outcomes: make(chan outcome, cfg.Workers),
		wake:     make(chan struct{}, 1),
		inflight: map[uuid.UUID]*job{},
	}
	for _, t := range tools {
		if _, dup := e.tools[t.Name()]; dup {
			return nil, fmt.Errorf("executor: tool %q registered twice", t.Name())
		}
		e.tools[t.Name()] = t
	}
	for _, s := range cfg.Sensitive {
		e.sensitive[s] = true
	}
	if cfg.TracerProvider != nil {
		e.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return e, nil
}

// Run claims and runs requests until ctx ends, then stops claiming, lets
// running calls finish for up to ShutdownGrace, stops the rest and records
// why, and returns once every outcome is written.
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
		e.completer(bg)
	}()
	wg.Go(func() { e.listen(bg) })
	wg.Go(func() { e.heartbeat(bg) })
	wg.Go(func() { e.rescuer(bg) })

	e.logger.Info("executor started", slog.Int("workers", e.cfg.Workers), slog.String("policy_digest", e.policy.Digest()))
	err := e.fetchLoop(ctx)
	e.shutdown()
	close(e.outcomes)
	<-completerDone
	if _, uerr := e.pool.Exec(bg, queryUnregisterWaiter, e.cfg.Label); uerr != nil {
		e.logger.Warn("unregister waiter", slog.Any("error", uerr))
	}
	stopBG()
	wg.Wait()
	e.logger.Info("executor stopped")
	return err
}

// shutdown waits for running calls up to the grace period, then stops them
// (their outcomes record why). It returns when no call is running.
func (e *Executor) shutdown() {
	deadline := time.NewTimer(e.cfg.ShutdownGrace)
	defer deadline.Stop()
	held := 0
	for held < cap(e.slots) {
		select {
		case e.slots <- struct{}{}:
			held++
			continue
		case <-deadline.C:
		}
		e.mu.Lock()
		for _, j := range e.inflight {
			if j.cancel != nil {
				j.cancel(errShutdown)
			}
		}
		n := len(e.inflight)
		e.mu.Unlock()
		e.logger.Warn("shutdown grace period over: stopping running calls", slog.Int("calls", n))
		for ; held < cap(e.slots); held++ {
			e.slots <- struct{}{}
		}
	}
}

// fetchLoop claims while there are free slots and work, and otherwise
// waits for a NOTIFY, a freed slot or the poll interval.
func (e *Executor) fetchLoop(ctx context.Context) error {
	waiting := false // registered in ledger.queue_waiters
	poll := time.NewTimer(0)
	defer poll.Stop()
	for ctx.Err() == nil {
		free := cap(e.slots) - len(e.slots)
		if free > 0 {
			n, err := e.claim(ctx, min(free, e.cfg.ClaimBatch))
			if errors.Is(err, ErrSkillsNotReady) {
				// The claim rolled back: build its skills outside any
				// transaction, then claim again.
				if err := e.cfg.Skills.Prepare(ctx); err != nil && ctx.Err() == nil {
					e.logger.Error("prepare skills", slog.Any("error", err))
					sleep(ctx, 200*time.Millisecond)
				}
				continue
			}
			if err != nil && ctx.Err() == nil {
				e.logger.Error("claim", slog.Any("error", err))
				sleep(ctx, 200*time.Millisecond)
				continue
			}
			if n > 0 {
				if waiting {
					waiting = !e.unregisterWaiter(ctx)
				}
				continue
			}
			if !waiting {
				if e.registerWaiter(ctx) {
					waiting = true
					continue // claim once more now that submitters will notify
				}
			}
		}
		poll.Reset(e.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-e.wake:
		case <-poll.C:
		}
	}
	return nil
}

// registerWaiter asks submitters to NOTIFY, then waits until every
// transaction that began before the registration was visible has ended:
// a submit that checked for waiters before then has committed, so the next
// claim sees its request. It reports whether the registration holds.
func (e *Executor) registerWaiter(ctx context.Context) bool {
	if _, err := e.pool.Exec(ctx, queryRegisterWaiter, e.cfg.Label); err != nil {
		e.logger.Warn("register waiter", slog.Any("error", err))
		return false
	}
	var horizon string
	if err := e.pool.QueryRow(ctx, queryHorizon).Scan(&horizon); err != nil {
		return true
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var passed bool
		if err := e.pool.QueryRow(ctx, queryHorizonPassed, horizon).Scan(&passed); err != nil || passed {
			return true
		}
		sleep(ctx, time.Millisecond)
	}
	return true
}

func (e *Executor) unregisterWaiter(ctx context.Context) bool {
	_, err := e.pool.Exec(ctx, queryUnregisterWaiter, e.cfg.Label)
	return err == nil
}

func (e *Executor) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// startup publishes the policy, waiting out a database that is away (a
// restart, a failover: the connection is cut or refused) with backoff
// rather than exiting: an executor started while PostgreSQL restarts
// would otherwise never run. Other errors end it.
func (e *Executor) startup(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := e.publishPolicy(ctx)
		if err == nil || ctx.Err() != nil || !databaseAway(err) {
			return err
		}
		e.logger.Warn("database unavailable at startup; retrying", slog.Any("error", err), slog.Duration("retry_in", backoff))
		sleep(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// databaseAway reports whether err says the database went away or is not
// back yet: a connection that could not be made or was cut (SQLSTATE
// class 08), or a server shutting down or starting (57P01–57P03).
func databaseAway(err error) bool {
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}

// publishPolicy appends policy.published when the loaded policy set is not
// the one the log last recorded.
func (e *Executor) publishPolicy(ctx context.Context) error {
	for attempt := 0; attempt < 5; attempt++ {
		var last *string
		err := e.pool.QueryRow(ctx, queryLastPolicyDigest).Scan(&last)
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("executor: read policy digest: %w", err)
		}
		if last != nil && *last == e.policy.Digest() {
			return nil
		}
		files := []map[string]string{}
		for _, s := range e.policy.Sources() {
			files = append(files, map[string]string{"name": s.Name, "text": string(s.Text)})
		}
		_, err = e.store.Append(ctx, "policy", ledger.AnyVersion, ledger.NewEvent{
			Type:     "policy.published",
			Payload:  map[string]any{"policy_digest": e.policy.Digest(), "policy_ids": e.policy.PolicyIDs(), "files": files},
			Metadata: ledger.Metadata{Actor: e.cfg.Label},
		})
		if errors.Is(err, ledger.ErrConcurrency) {
			continue
		}
		if err != nil {
			return fmt.Errorf("executor: publish policy: %w", err)
		}
		e.logger.Info("policy published", slog.String("policy_digest", e.policy.Digest()))
		return nil
	}
	return errors.New("executor: publish policy: too many concurrent publishers")
}
