//go:build river

package bench

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverLinked reports whether River is linked into this build: it is
// only with the river build tag (river_off.go is the build without it).
const RiverLinked = true

// DefaultSystem is every system this build links: River, river-audited
// and Execledger.
const DefaultSystem = SystemAll

// noopArgs is the River job of the baseline; it carries the same text as
// the echo requests.
type noopArgs struct {
	Text string `json:"text"`
}

func (noopArgs) Kind() string { return "execledger_bench_noop" }

// noopWorker does nothing: River's own cost per job is the baseline.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// riverTarget is River with a no-op worker: an insert-only client on the
// submitters' pool and a working client on its own pool, as a service and
// its worker process would have.
type riverTarget struct {
	system     string
	submitPool *pgxpool.Pool
	workPool   *pgxpool.Pool
	inserter   *river.Client[pgx.Tx]
	worker     *river.Client[pgx.Tx]
}

var _ target = (*riverTarget)(nil)

// newRiverTarget is River with the no-op worker.
func newRiverTarget(ctx context.Context, db *Database, cfg Config) (target, error) {
	return openRiver(ctx, db, cfg, SystemRiver, func(workers *river.Workers, _ *pgxpool.Pool) {
		river.AddWorker(workers, &noopWorker{})
	})
}

// openRiver migrates River's schema into db and builds the clients:
// River's defaults except for the queue's MaxWorkers and FetchCooldown
// (see Config.RiverFetchCooldown). addWorkers registers the system's
// worker, which may use the workers' pool.
func openRiver(ctx context.Context, db *Database, cfg Config, system string,
	addWorkers func(*river.Workers, *pgxpool.Pool)) (*riverTarget, error) {
	logger := cfg.Logger.With(slog.String("system", system))
	t := &riverTarget{system: system}
	var err error
	if t.submitPool, err = db.pool(ctx, cfg.Submitters, nil); err != nil {
		return nil, err
	}
	if t.workPool, err = db.pool(ctx, workConns, cfg.WorkSettings); err != nil {
		t.close()
		return nil, err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(t.workPool), &rivermigrate.Config{Logger: logger})
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("bench: migrate river: %w", err)
	}
	workers := river.NewWorkers()
	addWorkers(workers, t.workPool)
	t.inserter, err = river.NewClient(riverpgxv5.New(t.submitPool), &river.Config{Logger: logger, Workers: workers})
	if err == nil {
		t.worker, err = river.NewClient(riverpgxv5.New(t.workPool), &river.Config{
			Logger: logger, Workers: workers, FetchCooldown: cfg.RiverFetchCooldown,
			Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		})
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("bench: river client: %w", err)
	}
	return t, nil
}

func (t *riverTarget) name() string { return t.system }

func (t *riverTarget) insertBatch(ctx context.Context, first, n int) error {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{Text: "hello"}}
	}
	_, err := t.inserter.InsertMany(ctx, params)
	return err
}

func (t *riverTarget) submit(ctx context.Context, _ int) error {
	_, err := t.inserter.Insert(ctx, noopArgs{Text: "hello"}, nil)
	return err
}

func (t *riverTarget) start(ctx context.Context) (func(context.Context) error, <-chan struct{}, error) {
	if err := t.worker.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("bench: start river: %w", err)
	}
	return t.worker.Stop, t.worker.Stopped(), nil
}

func (t *riverTarget) depth(ctx context.Context) (int64, error) {
	var n int64
	err := t.workPool.QueryRow(ctx, queryRiverDepth).Scan(&n)
	return n, err
}

func (t *riverTarget) summarize(ctx context.Context, s *Summary) error {
	if err := readStates(ctx, t.workPool, queryRiverStates, "completed", s); err != nil {
		return err
	}
	if err := readWindows(ctx, t.workPool, "river_job", "created_at", "finalized_at", s); err != nil {
		return err
	}
	return readLatency(ctx, t.workPool, queryRiverLatency, s)
}

func (t *riverTarget) close() {
	for _, p := range []*pgxpool.Pool{t.submitPool, t.workPool} {
		if p != nil {
			p.Close()
		}
	}
}
