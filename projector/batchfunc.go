package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// stepBatch hands a Batch projection its next events in one transaction.
// A batch ends at a transaction boundary of the log whenever it can: the
// events a transaction appended are passed together (a transaction larger
// than the batch size goes whole, in a bigger batch), so what the
// projection commits to at a batch's end, such as a signed checkpoint,
// never splits one.
func (r *runner) stepBatch(ctx context.Context, conn *pgx.Conn, from ledger.Cursor) (bool, error) {
	events, err := r.readWhole(ctx, conn, from)
	if err != nil || len(events) == 0 {
		return false, err
	}
	start := time.Now()
	for {
		cause, err := r.commitBatch(ctx, conn, from, events)
		var at interface{ EventIndex() int }
		switch {
		case err != nil:
			return false, err
		case cause == nil:
			if time.Since(start) >= maxStepTime { // see maxStepTime: a long step holds back every reader
				r.size = 0
			}
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case transient(conn, cause):
			return false, fmt.Errorf("projector: %s after position %d: %w", r.proj.Name, from.Position, cause)
		case errors.As(cause, &at) && at.EventIndex() > 0 && at.EventIndex() < len(events):
			events = events[:at.EventIndex()]
		case errors.As(cause, &at) && at.EventIndex() == 0, len(events) == 1:
			ev := events[0]
			return false, r.fail(ctx, conn, ev.Cursor(), ev.Type, fmt.Errorf("%s: %w", ev.Type, cause))
		default:
			events = events[:len(events)/2]
		}
	}
}

// readWhole reads up to the step's size of events after from, trimmed
// back to the last transaction boundary; a transaction with more events
// than that is read whole. As stepSQL does, a projection that is behind
// takes bigger steps: a full batch doubles the next one's size, up to
// maxGrowth times the batch size, and one that finds fewer events, or
// took longer than maxStepTime to commit, goes back to the batch size.
func (r *runner) readWhole(ctx context.Context, conn *pgx.Conn, from ledger.Cursor) ([]ledger.Event, error) {
	base := r.e.cfg.BatchSize
	if r.proj.BatchSize > 0 {
		base = r.proj.BatchSize
	}
	limit := max(r.size, base)
	r.size = base
	for {
		events, err := ledger.ReadAllOn(ctx, conn, from, limit+1)
		if err != nil {
			return nil, fmt.Errorf("projector: read after %+v for %s: %w", from, r.proj.Name, err)
		}
		if len(events) <= limit {
			return events, nil
		}
		r.size = min(2*limit, maxGrowth*base)
		next := events[limit].TxID
		n := limit
		for n > 0 && events[n-1].TxID == next {
			n--
		}
		if n > 0 {
			return events[:n], nil
		}
		limit *= 2 // one transaction fills the batch: read all of it
	}
}

// commitBatch runs the batch function in a transaction and commits it.
// The batch function's error is returned as cause, with nothing
// committed; err is a database error of the engine's own.
func (r *runner) commitBatch(ctx context.Context, conn *pgx.Conn, from ledger.Cursor, events []ledger.Event) (cause, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("projector: begin %s: %w", r.proj.Name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := r.batch(ctx, tx, from, events); err != nil {
		return err, nil
	}
	to := events[len(events)-1].Cursor()
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("projector: commit %s at %+v: %w", r.proj.Name, to, err)
	}
	r.checked = to
	r.e.metrics.applied(r.proj.Name, int64(len(events)), to)
	return nil, nil
}

// batch runs the batch function, turning a panic into its error.
func (r *runner) batch(ctx context.Context, tx pgx.Tx, from ledger.Cursor, events []ledger.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError{value: p}
		}
	}()
	return r.proj.Batch(ctx, tx, from, events)
}
