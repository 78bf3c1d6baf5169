package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// States of a projection (ledger.projections.state).
const (
	stateActive = "active"
	stateFailed = "failed"
)

// item is an event of a batch; only consumed ones carry payload and
// metadata.
type item struct {
	ev       ledger.Event
	consumed bool
}

// read returns the next batch after from, outside any transaction.
func (r *runner) read(ctx context.Context, conn *pgx.Conn, from ledger.Cursor) ([]item, error) {
	rows, err := conn.Query(ctx, queryBatch, strconv.FormatUint(from.TxID, 10), from.Position, r.e.cfg.BatchSize, r.types)
	if err != nil {
		return nil, fmt.Errorf("projector: read after %+v for %s: %w", from, r.proj.Name, err)
	}
	batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (item, error) {
		var it item
		var tx string
		var payload, metadata *string
		var hash []byte
		if err := row.Scan(&it.ev.Position, &tx, &it.ev.Stream, &it.ev.Version, &it.ev.Type,
			&payload, &metadata, &it.ev.RecordedAt, &hash); err != nil {
			return it, err
		}
		txID, err := strconv.ParseUint(tx, 10, 64)
		if err != nil {
			return it, fmt.Errorf("tx_id %q: %w", tx, err)
		}
		it.ev.TxID = txID
		copy(it.ev.Hash[:], hash)
		if payload != nil {
			it.consumed = true
			it.ev.Payload, it.ev.Metadata = []byte(*payload), []byte(*metadata)
		}
		return it, nil
	})
	if err != nil {
		return nil, fmt.Errorf("projector: read after %+v for %s: %w", from, r.proj.Name, err)
	}
	return batch, nil
}

// process applies batch and advances the checkpoint in one transaction.
// When an apply function fails at an event, the events before it are
// committed on their own and the next step meets the failing event first:
// applied alone it fails again and the projection is stopped there, its
// checkpoint just before it.
func (r *runner) process(ctx context.Context, conn *pgx.Conn, from ledger.Cursor, batch []item) error {
	for {
		bad, cause, err := r.commit(ctx, conn, from, batch)
		switch {
		case err != nil:
			return err
		case cause == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err() // shutting down mid-apply says nothing about the event
		case transient(conn, cause):
			return fmt.Errorf("projector: apply %s at position %d: %w", r.proj.Name, batch[bad].ev.Position, cause)
		case bad > 0:
			batch = batch[:bad]
		default:
			ev := batch[0].ev
			return r.fail(ctx, conn, ev.Cursor(), ev.Type, fmt.Errorf("%s: %w", ev.Type, cause))
		}
	}
}

// commit applies batch in one transaction with the checkpoint's move from
// from to its last event. An apply function's error is returned as cause,
// with the index of its event, and nothing is committed; err is a database
// error of the engine's own.
func (r *runner) commit(ctx context.Context, conn *pgx.Conn, from ledger.Cursor, batch []item) (bad int, cause, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("projector: begin %s: %w", r.proj.Name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var applied int64
	for i, it := range batch {
		if !it.consumed {
			continue
		}
		if err := r.apply(ctx, tx, it.ev); err != nil {
			return i, err, nil
		}
		applied++
	}
	to := batch[len(batch)-1].ev.Cursor()
	if _, err := tx.Exec(ctx, queryAdvance, r.proj.Name, strconv.FormatUint(from.TxID, 10), from.Position,
		strconv.FormatUint(to.TxID, 10), to.Position, applied); err != nil {
		return 0, nil, fmt.Errorf("projector: advance %s to %+v: %w", r.proj.Name, to, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, nil, fmt.Errorf("projector: commit %s at %+v: %w", r.proj.Name, to, err)
	}
	r.checked = to
	r.e.metrics.applied(r.proj.Name, applied, to)
	return 0, nil, nil
}

// apply runs ev's apply function, turning a panic into its error.
func (r *runner) apply(ctx context.Context, tx pgx.Tx, ev ledger.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError{value: p}
		}
	}()
	return r.proj.Apply[ev.Type](ctx, tx, ev)
}

// fail stops the projection at c (an event of type typ, or a checkpoint
// when typ is "") and records why, with a projection.failed event.
func (r *runner) fail(ctx context.Context, conn *pgx.Conn, c ledger.Cursor, typ string, cause error) error {
	var typArg *string
	if typ != "" {
		typArg = &typ
	}
	if _, err := conn.Exec(ctx, queryFail, r.proj.Name, strconv.FormatUint(c.TxID, 10), c.Position, typArg, cause.Error()); err != nil {
		return fmt.Errorf("projector: record failure of %s at position %d (%v): %w", r.proj.Name, c.Position, cause, err)
	}
	r.logger.Error("projection failed", slog.Int64("position", c.Position), slog.String("event_type", typ), slog.Any("error", cause))
	return nil
}

// maxGrowth bounds how many times BatchSize a SQL projection's step grows
// to while the projection is behind.
const maxGrowth = 16

// maxStepTime bounds the steps that grow. A step holds a transaction id
// from its first write (the checkpoint's move) to its commit, and
// ledger.read_all delivers nothing committed after that id until then: a
// long step holds back every reader of the log, this projection's next
// step, the other projections and the sealer included, and then lets
// seconds-old events through at once. A step that took longer than this
// does not grow the next one; the step size goes back to BatchSize.
const maxStepTime = 200 * time.Millisecond

// stepSQL applies a SQL projection's next events through
// ledger.projection_step, which picks them (up to BatchSize of those
// read_all can deliver), moves the checkpoint and runs the apply function
// in one transaction, without the events coming to the engine. The apply
// function works on whole batches, so a failure does not say which event
// caused it: the step is tried again with half as many events, down to
// the one event that fails alone, where the projection stops.
//
// Behind, the runner takes bigger steps: a full step that took less than
// maxStepTime doubles the next one's size, up to maxGrowth times
// BatchSize, and one that finds fewer events or took longer goes back to
// BatchSize. A step's fixed costs (a transaction, the
// checkpoint's update, planning) are then spread over more events, so a
// projection that fell behind under load catches up.
func (r *runner) stepSQL(ctx context.Context, conn *pgx.Conn, from ledger.Cursor) (bool, error) {
	limit := max(r.size, r.e.cfg.BatchSize)
	for {
		start := time.Now()
		var tx string
		var to ledger.Cursor
		var passed, applied int64
		err := conn.QueryRow(ctx, queryStep, r.proj.Name, strconv.FormatUint(from.TxID, 10), from.Position, limit).
			Scan(&tx, &to.Position, &passed, &applied)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return false, nil
		case err == nil:
			if to.TxID, err = strconv.ParseUint(tx, 10, 64); err != nil {
				return false, fmt.Errorf("projector: step %s: tx_id %q: %w", r.proj.Name, tx, err)
			}
			r.checked = to
			r.e.metrics.applied(r.proj.Name, applied, to)
			r.size = r.e.cfg.BatchSize
			if passed >= int64(limit) && time.Since(start) < maxStepTime {
				r.size = min(2*limit, maxGrowth*r.e.cfg.BatchSize)
			}
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case transient(conn, err):
			return false, fmt.Errorf("projector: step %s after position %d: %w", r.proj.Name, from.Position, err)
		case limit > 1:
			limit /= 2
			continue
		}
		// The first event after the checkpoint fails on its own.
		batch, rerr := r.read(ctx, conn, from)
		if rerr != nil {
			return false, rerr
		}
		if len(batch) == 0 {
			return false, fmt.Errorf("projector: step %s after position %d failed with no event to blame: %w", r.proj.Name, from.Position, err)
		}
		ev := batch[0].ev
		return false, r.fail(ctx, conn, ev.Cursor(), ev.Type, fmt.Errorf("%s: %w", ev.Type, err))
	}
}
