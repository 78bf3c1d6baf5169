package projector

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/retry"
	"github.com/execledger/execledger/ledger"
)

// group follows the ledger's asynchronous read models (Projection.SQL) in
// one pass: each step reads the next batch once, parses each event's JSON
// once, and applies every read model from it in one transaction
// (ledger.projection_step_group), where one runner each would read, parse
// and commit the same events once per read model.
//
// The group holds every member's lock, so that a member applies its events
// from one runner at a time across processes exactly as a runner of its own
// would; it takes them all or none (a standby holding some never waits on a
// peer holding the others). A member that is failed or being rebuilt is
// left out of the group's steps and resumes from its own checkpoint, behind
// the others, when it is active again: the group's next batches start at
// the furthest behind checkpoint and each member applies what is after its
// own. A group step that fails rolls back every member; the group then
// steps each member alone (runner.stepSQL), which halves its batch down to
// the event that fails and stops that member only.
type group struct {
	e       *Engine
	members []*runner
	logger  *slog.Logger
	// size is the next group step's size (as runner.size).
	size int
}

func newGroup(e *Engine, ps []Projection) *group {
	g := &group{e: e}
	names := make([]string, len(ps))
	for i, p := range ps {
		g.members = append(g.members, newRunner(e, p))
		names[i] = p.Name
	}
	g.logger = e.logger.With(slog.String("projections", strings.Join(names, ",")))
	return g
}

// run holds sessions until ctx ends, reconnecting with backoff.
func (g *group) run(ctx context.Context) {
	g.e.keep(ctx, g.logger, "projection group", g.session)
}

// session takes a connection of its own, waits until it holds every
// member's lock on it and then follows the log; it returns on the first
// database error.
func (g *group) session(ctx context.Context) error {
	pc, err := g.e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projector: connect: %w", err)
	}
	conn := pc.Hijack() // the locks live as long as this connection
	defer conn.Close(context.WithoutCancel(ctx))

	keys := make([]int32, len(g.members))
	for i, r := range g.members {
		if err := conn.QueryRow(ctx, queryRegister, r.proj.Name).Scan(&keys[i]); err != nil {
			return fmt.Errorf("projector: register %s: %w", r.proj.Name, err)
		}
	}
	for {
		held, err := g.lockAll(ctx, conn, keys)
		if err != nil {
			return err
		}
		if held {
			break
		}
		for _, r := range g.members {
			r.observe(ctx, conn)
		}
		if !retry.Sleep(ctx, g.e.cfg.LockRetryInterval) {
			return ctx.Err()
		}
	}
	g.logger.Info("projection group took the locks")
	for _, r := range g.members {
		r.checked = ledger.Cursor{}
		g.e.metrics.setRunning(r.proj.Name, true)
		defer g.e.metrics.setRunning(r.proj.Name, false)
	}
	return g.follow(ctx, conn)
}

// lockAll takes every key's lock, or none: it gives back those it took
// when one is held elsewhere.
func (g *group) lockAll(ctx context.Context, conn *pgx.Conn, keys []int32) (bool, error) {
	for i, key := range keys {
		var held bool
		if err := conn.QueryRow(ctx, queryTryLock, int32(lockClass), key).Scan(&held); err != nil {
			return false, fmt.Errorf("projector: lock %s: %w", g.members[i].proj.Name, err)
		}
		if held {
			continue
		}
		for _, k := range keys[:i] {
			if _, err := conn.Exec(ctx, queryUnlock, int32(lockClass), k); err != nil {
				return false, fmt.Errorf("projector: unlock: %w", err)
			}
		}
		return false, nil
	}
	return true, nil
}

// follow applies batches while there are events, and polls when there are
// none. No transaction is open while it waits.
func (g *group) follow(ctx context.Context, conn *pgx.Conn) error {
	for {
		worked, err := g.step(ctx, conn)
		if err != nil {
			return err
		}
		for _, r := range g.members {
			r.observe(ctx, conn)
		}
		if !worked && !retry.Sleep(ctx, g.e.cfg.PollInterval) {
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// step does one batch for the active members; it reports whether there
// was anything to do.
func (g *group) step(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var active []*runner
	from := map[string]ledger.Cursor{}
	for _, r := range g.members {
		c, state, err := r.checkpoint(ctx, conn)
		if err != nil {
			return false, err
		}
		if state != stateActive {
			continue
		}
		if c != r.checked {
			ok, err := r.checkCheckpoint(ctx, conn, c)
			if err != nil {
				return false, err
			}
			if !ok {
				continue
			}
		}
		active = append(active, r)
		from[r.proj.Name] = c
	}
	switch len(active) {
	case 0:
		return false, nil
	case 1:
		return active[0].stepSQL(ctx, conn, from[active[0].proj.Name])
	}
	names := make([]string, len(active))
	byName := map[string]*runner{}
	for i, r := range active {
		names[i] = r.proj.Name
		byName[r.proj.Name] = r
	}
	limit := max(g.size, g.e.cfg.BatchSize)
	start := time.Now()
	moved, err := g.stepGroup(ctx, conn, names, limit)
	switch {
	case err == nil:
		if len(moved) == 0 {
			return false, nil
		}
		var passed int64
		for _, m := range moved {
			r := byName[m.name]
			r.checked = m.to
			g.e.metrics.applied(m.name, m.applied, m.to)
			passed = max(passed, m.passed)
		}
		g.size = g.e.cfg.BatchSize
		if passed >= int64(limit) && time.Since(start) < maxStepTime {
			g.size = min(2*limit, maxGrowth*g.e.cfg.BatchSize)
		}
		return true, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case transient(conn, err):
		return false, fmt.Errorf("projector: step %s: %w", strings.Join(names, ","), err)
	}
	// A member's apply failed on some event of the batch: each member
	// alone finds out which, and the one it fails stops there.
	g.logger.Warn("projection group step failed; stepping each projection alone", slog.Any("error", err))
	g.size = g.e.cfg.BatchSize
	worked := false
	for _, r := range active {
		w, err := r.stepSQL(ctx, conn, from[r.proj.Name])
		if err != nil {
			return worked, err
		}
		worked = worked || w
	}
	return worked, nil
}

// moved is a member a group step moved.
type moved struct {
	name            string
	to              ledger.Cursor
	passed, applied int64
}

func (g *group) stepGroup(ctx context.Context, conn *pgx.Conn, names []string, limit int) ([]moved, error) {
	rows, err := conn.Query(ctx, queryStepGroup, names, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (moved, error) {
		var m moved
		var tx string
		if err := row.Scan(&m.name, &tx, &m.to.Position, &m.passed, &m.applied); err != nil {
			return m, err
		}
		var err error
		if m.to.TxID, err = strconv.ParseUint(tx, 10, 64); err != nil {
			return m, fmt.Errorf("tx_id %q: %w", tx, err)
		}
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range out {
		if !slices.Contains(names, m.name) {
			return nil, fmt.Errorf("projector: the group step moved %s, which it was not given", m.name)
		}
	}
	return out, nil
}
