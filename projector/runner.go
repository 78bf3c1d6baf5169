package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/execledger/execledger/internal/retry"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Why a session advisory lock rather than a lease row: the server releases
// it the moment the holder's connection ends (process killed, host gone
// once TCP gives up, PostgreSQL restarted), with no clock, heartbeat or
// lease length to tune, so a standby takes over within one
// LockRetryInterval. The runner applies its batches on the connection that
// holds the lock, so a batch can never outlive the lock: when the
// connection dies the batch's transaction dies with it. projection_advance
// also moves the checkpoint only from the cursor the batch started at,
// which turns any second writer (a hand edit, a bug) into a rolled-back
// batch rather than an event applied twice.

// runner follows one projection.
type runner struct {
	e      *Engine
	proj   Projection
	types  []string
	logger *slog.Logger

	// checked is the checkpoint last seen to name an event (or zero): a
	// checkpoint other than the one the runner itself wrote is checked
	// against the log before the runner reads after it.
	checked ledger.Cursor
	// observed is when the metrics were last refreshed.
	observed time.Time
	// size is the next SQL step's size (stepSQL).
	size int
}

func newRunner(e *Engine, p Projection) *runner {
	return &runner{e: e, proj: p, types: p.Types(), logger: e.logger.With(slog.String("projection", p.Name))}
}

// run holds sessions until ctx ends, reconnecting with backoff.
func (r *runner) run(ctx context.Context) {
	r.e.keep(ctx, r.logger, "projection runner", r.session)
}

// keep runs session until ctx ends, again after each error, with a backoff
// that doubles up to MaxBackoff and starts over after a session that
// lasted longer than that.
func (e *Engine) keep(ctx context.Context, logger *slog.Logger, what string, session func(context.Context) error) {
	backoff := e.cfg.PollInterval
	for {
		start := time.Now()
		err := session(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > e.cfg.MaxBackoff {
			backoff = e.cfg.PollInterval // it worked for a while: start over
		}
		logger.Warn(what+" lost its connection", slog.Any("error", err), slog.Duration("retry_in", backoff))
		if !retry.Sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, e.cfg.MaxBackoff)
	}
}

// session takes a connection of its own, waits for the projection's lock
// on it and then follows the log; it returns on the first database error.
func (r *runner) session(ctx context.Context) error {
	pc, err := r.e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projector: connect: %w", err)
	}
	conn := pc.Hijack() // the lock lives as long as this connection, never back in the pool
	defer conn.Close(context.WithoutCancel(ctx))

	var key int32
	if err := conn.QueryRow(ctx, queryRegister, r.proj.Name).Scan(&key); err != nil {
		return fmt.Errorf("projector: register %s: %w", r.proj.Name, err)
	}
	for {
		var held bool
		if err := conn.QueryRow(ctx, queryTryLock, int32(lockClass), key).Scan(&held); err != nil {
			return fmt.Errorf("projector: lock %s: %w", r.proj.Name, err)
		}
		if held {
			break
		}
		r.observe(ctx, conn)
		if !retry.Sleep(ctx, r.e.cfg.LockRetryInterval) {
			return ctx.Err()
		}
	}
	r.logger.Info("projection runner took the lock")
	r.checked = ledger.Cursor{}
	r.e.metrics.setRunning(r.proj.Name, true)
	defer r.e.metrics.setRunning(r.proj.Name, false)
	return r.follow(ctx, conn)
}

// follow applies batches while there are events, and polls when there
// are none or the projection is failed. No transaction is open while it
// waits.
func (r *runner) follow(ctx context.Context, conn *pgx.Conn) error {
	for {
		worked, err := r.step(ctx, conn)
		if err != nil {
			return err
		}
		if r.proj.Tick != nil {
			if err := r.proj.Tick(ctx, conn); err != nil {
				return fmt.Errorf("projector: %s between batches: %w", r.proj.Name, err)
			}
		}
		r.observe(ctx, conn)
		if !worked && !retry.Sleep(ctx, r.e.cfg.PollInterval) {
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// step does one batch; it reports whether there was anything to do.
func (r *runner) step(ctx context.Context, conn *pgx.Conn) (bool, error) {
	from, state, err := r.checkpoint(ctx, conn)
	if err != nil || state != stateActive {
		return false, err
	}
	if from != r.checked {
		if ok, err := r.checkCheckpoint(ctx, conn, from); err != nil || !ok {
			return false, err
		}
	}
	if r.proj.SQL {
		return r.stepSQL(ctx, conn, from)
	}
	if r.proj.Batch != nil {
		return r.stepBatch(ctx, conn, from)
	}
	batch, err := r.read(ctx, conn, from)
	if err != nil || len(batch) == 0 {
		return false, err
	}
	return true, r.process(ctx, conn, from, batch)
}

func (r *runner) checkpoint(ctx context.Context, conn *pgx.Conn) (ledger.Cursor, string, error) {
	var tx string
	var c ledger.Cursor
	var state string
	if err := conn.QueryRow(ctx, queryCheckpoint, r.proj.Name).Scan(&tx, &c.Position, &state); err != nil {
		return c, "", fmt.Errorf("projector: read checkpoint of %s: %w", r.proj.Name, err)
	}
	var err error
	if c.TxID, err = strconv.ParseUint(tx, 10, 64); err != nil {
		return c, "", fmt.Errorf("projector: checkpoint of %s: tx_id %q: %w", r.proj.Name, tx, err)
	}
	return c, state, nil
}

// checkCheckpoint makes sure a checkpoint names an event of the log: one
// that does not (set by hand, or a log restored from an older backup)
// would have the runner wait silently for events that never come, or skip
// those behind it. It fails the projection, saying which, and reports
// false.
func (r *runner) checkCheckpoint(ctx context.Context, conn *pgx.Conn, c ledger.Cursor) (bool, error) {
	if c == (ledger.Cursor{}) {
		r.checked = c
		return true, nil
	}
	var exists bool
	if err := conn.QueryRow(ctx, queryEventAt, strconv.FormatUint(c.TxID, 10), c.Position).Scan(&exists); err != nil {
		return false, fmt.Errorf("projector: check checkpoint of %s: %w", r.proj.Name, err)
	}
	if exists {
		r.checked = c
		return true, nil
	}
	var endTx string
	var end ledger.Cursor
	err := conn.QueryRow(ctx, queryLogEnd).Scan(&endTx, &end.Position)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("projector: check checkpoint of %s: %w", r.proj.Name, err)
	}
	end.TxID, _ = strconv.ParseUint(endTx, 10, 64)
	var msg string
	if c.TxID > end.TxID || (c.TxID == end.TxID && c.Position > end.Position) {
		msg = fmt.Sprintf("checkpoint (tx_id %d, position %d) is ahead of the log, whose last event is (tx_id %d, position %d)",
			c.TxID, c.Position, end.TxID, end.Position)
	} else {
		msg = fmt.Sprintf("checkpoint (tx_id %d, position %d) names no event of the log", c.TxID, c.Position)
	}
	return false, r.fail(ctx, conn, c, "", errors.New(msg))
}
