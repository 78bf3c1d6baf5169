package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/migrations"
	"github.com/execledger/execledger/projector"
)

// benchPolicy lets the principal "bench" run echo and nothing else.
const benchPolicy = `@id("bench-echo")
permit (principal == Principal::"bench", action == Action::"tool.execute", resource == Tool::"echo");
`

// ledgerTarget is Execledger: ledger.submit, and an executor running the
// full pipeline with the built-in tools.
type ledgerTarget struct {
	submitPool *pgxpool.Pool
	workPool   *pgxpool.Pool
	exec       *executor.Executor
	// The projection engine keeps the asynchronous read models current,
	// as in serve, on a pool of its own (each runner holds a connection);
	// lag samples its seconds behind every lagSampleInterval.
	projPool    *pgxpool.Pool
	engine      *projector.Engine
	noProjector bool
	noSealer    bool
	lagMu       sync.Mutex
	lag         []float64
	sealerLag   []float64
	// caughtUp is how long the read models and the sealer took, after
	// the last request was final, to apply and seal the rest of the log.
	caughtUp time.Duration
}

// queryLedgerProjectionLag is the seconds behind of the asynchronous
// projection furthest behind, and of the Merkle log's sealer.
const queryLedgerProjectionLag = `SELECT coalesce(max(b.behind) FILTER (WHERE b.mode = 'async'), 0)::float8,
       coalesce(max(b.behind) FILTER (WHERE b.mode = 'sealer'), 0)::float8
FROM (SELECT p.mode, extract(epoch FROM clock_timestamp() - (
          SELECT e.recorded_at FROM ledger.events e
          WHERE (e.tx_id, e.position) > (p.tx_id, p.position) AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY e.tx_id, e.position LIMIT 1)) AS behind
      FROM ledger.projections p WHERE p.mode IN ('async', 'sealer')) b`

// lagSampleInterval is how often the projections' lag is sampled.
const lagSampleInterval = 100 * time.Millisecond

var _ target = (*ledgerTarget)(nil)

// newLedgerTarget migrates db, maps the login role to the principal
// "bench", and builds an executor with a fresh in-memory signing key.
func newLedgerTarget(ctx context.Context, db *Database, cfg Config) (*ledgerTarget, error) {
	if err := migrateLedger(ctx, db); err != nil {
		return nil, err
	}
	pol, err := policy.FromSources([]policy.Source{{Name: "bench.cedar", Text: []byte(benchPolicy)}})
	if err != nil {
		return nil, fmt.Errorf("bench: policy: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	t := &ledgerTarget{noProjector: cfg.NoProjector, noSealer: cfg.NoSealer}
	if t.submitPool, err = db.pool(ctx, cfg.Submitters, nil); err != nil {
		return nil, err
	}
	if t.workPool, err = db.pool(ctx, workConns, cfg.WorkSettings); err != nil {
		t.close()
		return nil, err
	}
	projections, err := benchProjections(cfg)
	if err != nil {
		t.close()
		return nil, err
	}
	if t.projPool, err = db.pool(ctx, len(projections)+2, nil); err != nil {
		t.close()
		return nil, err
	}
	if len(projections) > 0 {
		if t.engine, err = projector.New(t.projPool, projector.Config{Logger: cfg.Logger}, projections...); err != nil {
			t.close()
			return nil, err
		}
	}
	xcfg := executor.Config{Label: "bench", Workers: cfg.Workers, ClaimBatch: cfg.ClaimBatch, CompleteBatch: cfg.CompleteBatch,
		DefaultMaxCallsPerRun: callsPerRun}
	t.exec, err = executor.New(t.workPool, xcfg, pol, attest.NewSigner(priv),
		cfg.Logger.With(slog.String("system", SystemExecledger)), executor.Echo{}, executor.Sleep{})
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// benchProjections are what serve's engine runs: the read models and the
// Merkle log's sealer (signing with a fresh note key, serve's defaults),
// each unless turned off.
func benchProjections(cfg Config) ([]projector.Projection, error) {
	var ps []projector.Projection
	if !cfg.NoProjector {
		ps = append(ps, projector.ReadModels()...)
	}
	if !cfg.NoSealer {
		skey, _, err := note.GenerateKey(rand.Reader, "bench.execledger/log")
		if err != nil {
			return nil, err
		}
		signer, err := note.NewSigner(skey)
		if err != nil {
			return nil, err
		}
		p := projector.Sealer(ledger.NewSealer(ledger.SealerConfig{Signer: signer, Logger: cfg.Logger}))
		p.BatchSize = 1000
		ps = append(ps, p)
	}
	return ps, nil
}

func migrateLedger(ctx context.Context, db *Database) error {
	conn, err := db.connect(ctx)
	if err != nil {
		return fmt.Errorf("bench: connect to %s: %w", db.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := migrations.Migrate(ctx, conn); err != nil {
		return fmt.Errorf("bench: migrate: %w", err)
	}
	if _, err := conn.Exec(ctx, queryLedgerMapPrincipal); err != nil {
		return fmt.Errorf("bench: map the login role to principal bench: %w", err)
	}
	return nil
}

func (t *ledgerTarget) name() string { return SystemExecledger }

// insertBatch inserts n requests with one ledger.submit_many, as River's
// target inserts its batch with one InsertMany.
func (t *ledgerTarget) insertBatch(ctx context.Context, first, n int) error {
	ps := make([]ledger.SubmitParams, n)
	for i := range ps {
		ps[i] = ledger.SubmitParams{Tool: "echo", Input: json.RawMessage(echoInput), RunID: runID(first + i)}
	}
	_, err := ledger.SubmitMany(ctx, t.submitPool, ps)
	return err
}

func (t *ledgerTarget) submit(ctx context.Context, seq int) error {
	_, err := ledger.Submit(ctx, t.submitPool, ledger.SubmitParams{Tool: "echo", Input: json.RawMessage(echoInput), RunID: runID(seq)})
	return err
}

func (t *ledgerTarget) start(ctx context.Context) (func(context.Context) error, <-chan struct{}, error) {
	runCtx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	var runErr error
	var wg sync.WaitGroup
	if t.engine != nil {
		wg.Go(func() { _ = t.engine.Run(runCtx) })
		wg.Go(func() { t.sampleLag(runCtx) })
	}
	go func() {
		defer close(exited)
		runErr = t.exec.Run(runCtx)
		cancel()
		wg.Wait()
	}()
	stop := func(stopCtx context.Context) error {
		// The read models and the sealer finish the log before the run
		// ends, so that the CPU counted is all of a request's work.
		if t.engine != nil {
			began := time.Now()
			if err := t.awaitCaughtUp(stopCtx); err != nil {
				cancel()
				<-exited
				return err
			}
			t.caughtUp = time.Since(began)
		}
		cancel()
		select {
		case <-exited:
			return runErr
		case <-stopCtx.Done():
			return errors.New("bench: the executor did not stop in time")
		}
	}
	return stop, exited, nil
}

// awaitCaughtUp waits until the running asynchronous projections and the
// sealer have nothing left to apply.
func (t *ledgerTarget) awaitCaughtUp(ctx context.Context) error {
	for {
		var worst, sealer float64
		if err := t.projPool.QueryRow(ctx, queryLedgerProjectionLag).Scan(&worst, &sealer); err != nil {
			return fmt.Errorf("bench: wait for the read models and the sealer: %w", err)
		}
		if (t.noProjector || worst == 0) && (t.noSealer || sealer == 0) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: the read models and the sealer did not catch up: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sampleLag records, every lagSampleInterval until ctx ends, how far the
// asynchronous projection furthest behind is (seconds behind: the age of
// the first event it has not applied). It reads only that age, an index
// probe per projection, not Engine.Status, whose count of events behind
// would load the server it measures.
func (t *ledgerTarget) sampleLag(ctx context.Context) {
	tick := time.NewTicker(lagSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var worst, sealer float64
		if err := t.projPool.QueryRow(ctx, queryLedgerProjectionLag).Scan(&worst, &sealer); err != nil {
			continue
		}
		t.lagMu.Lock()
		if !t.noProjector {
			t.lag = append(t.lag, worst)
		}
		if !t.noSealer {
			t.sealerLag = append(t.sealerLag, sealer)
		}
		t.lagMu.Unlock()
	}
}

func (t *ledgerTarget) depth(ctx context.Context) (int64, error) {
	var n int64
	err := t.workPool.QueryRow(ctx, queryLedgerDepth).Scan(&n)
	return n, err
}

func (t *ledgerTarget) summarize(ctx context.Context, s *Summary) error {
	if err := readStates(ctx, t.workPool, queryLedgerStates, string(ledger.StateSucceeded), s); err != nil {
		return err
	}
	if err := readWindows(ctx, t.workPool, "ledger.request_status", "submitted_at", "finished_at", s); err != nil {
		return err
	}
	if err := readLatency(ctx, t.workPool, queryLedgerLatency, s); err != nil {
		return err
	}
	var events int64
	if err := t.workPool.QueryRow(ctx, queryLedgerEvents).Scan(&events); err != nil {
		return fmt.Errorf("bench: count events: %w", err)
	}
	if s.Requests > 0 {
		s.EventsPerRequest = float64(events) / float64(s.Requests)
	}
	t.lagMu.Lock()
	s.ProjectionLag = lagPercentiles(t.lag)
	s.SealerLag = lagPercentiles(t.sealerLag)
	if t.engine != nil {
		s.CaughtUpSeconds = t.caughtUp.Seconds()
	}
	t.lagMu.Unlock()
	return nil
}

// lagPercentiles summarizes lag samples (seconds) in milliseconds.
func lagPercentiles(samples []float64) *Latency {
	if len(samples) == 0 {
		return nil
	}
	ms := make([]float64, len(samples))
	for i, v := range samples {
		ms[i] = v * 1000
	}
	slices.Sort(ms)
	at := func(q float64) float64 { return ms[min(len(ms)-1, int(q*float64(len(ms))))] }
	return &Latency{Count: int64(len(ms)), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms[len(ms)-1]}
}

func (t *ledgerTarget) close() {
	for _, p := range []*pgxpool.Pool{t.submitPool, t.workPool, t.projPool} {
		if p != nil {
			p.Close()
		}
	}
}
