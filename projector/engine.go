package projector

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Engine runs projections: one runner per projection, each a candidate for
// that projection's lock. Engines in any number of processes may run the
// same projections; one runner of each works at a time.
type Engine struct {
	pool        *pgxpool.Pool
	cfg         Config
	projections []Projection
	metrics     *metrics
	logger      *slog.Logger
}

// New returns an engine for projections over pool. An engine with no
// projections still serves Status and Retry.
func New(pool *pgxpool.Pool, cfg Config, projections ...Projection) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range projections {
		if err := p.validate(); err != nil {
			return nil, err
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("projector: projection %s given twice", p.Name)
		}
		seen[p.Name] = true
	}
	return &Engine{
		pool:        pool,
		cfg:         cfg,
		projections: projections,
		metrics:     newMetrics(cfg.Registerer),
		logger:      cfg.Logger.With(slog.String("component", "projector")),
	}, nil
}

// Run runs every projection until ctx ends: the ledger's read models
// (Projection.SQL) together, in one pass over each batch (group), unless
// Config.NoGroup; every other projection on a runner of its own. Database
// errors are logged and retried with backoff; Run returns only when ctx is
// done.
func (e *Engine) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	var sql []Projection
	for _, p := range e.projections {
		if p.SQL && !e.cfg.NoGroup {
			sql = append(sql, p)
			continue
		}
		r := newRunner(e, p)
		wg.Go(func() { r.run(ctx) })
	}
	switch len(sql) {
	case 0:
	case 1:
		r := newRunner(e, sql[0])
		wg.Go(func() { r.run(ctx) })
	default:
		g := newGroup(e, sql)
		wg.Go(func() { g.run(ctx) })
	}
	wg.Wait()
	return ctx.Err()
}
