package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/ledger"
)

// completer writes finished calls in batches: whatever has finished while
// the previous batch was being written goes into the next transaction, so
// throughput comes from fewer, larger transactions without delaying a
// lone completion.
func (e *Executor) completer(ctx context.Context) {
	for {
		first, ok := <-e.outcomes
		if !ok {
			return
		}
		batch := []outcome{first}
	drain:
		for len(batch) < e.cfg.CompleteBatch {
			select {
			case o, ok := <-e.outcomes:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		e.completeWithRetry(ctx, batch)
	}
}

func (e *Executor) completeWithRetry(ctx context.Context, batch []outcome) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := e.complete(ctx, batch)
		if err == nil {
			break
		}
		if isDataError(err) {
			// Something in one outcome cannot be stored: write the others,
			// and the culprit as a runtime_failure, one at a time.
			e.logger.Error("complete: an outcome cannot be stored; writing the batch one by one", slog.Any("error", err))
			e.completeEach(ctx, batch)
			break
		}
		if attempt == 8 || ctx.Err() != nil {
			// The leases will expire and the rescuer will settle these requests.
			e.logger.Error("complete: giving up; leases will expire", slog.Int("requests", len(batch)), slog.Any("error", err))
			break
		}
		e.logger.Warn("complete: retrying", slog.Int("attempt", attempt), slog.Any("error", err))
		sleep(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
	e.mu.Lock()
	for _, o := range batch {
		delete(e.inflight, o.job.id)
		o.job.cancel(nil)
		endRequest(o.job, o.result)
	}
	e.metrics.setInflight(len(e.inflight))
	e.mu.Unlock()
}

// complete writes one batch in one transaction: execution.finished and
// attestation.signed for each request whose claim is still this executor's,
// the read model, the queue, the NOTIFYs, and the storage writes of those
// of its calls that succeeded (Result.StorageWrites): an outcome dropped
// because its claim was lost, or a failure, writes nothing.
func (e *Executor) complete(ctx context.Context, batch []outcome) (err error) {
	e.refuseUnstorable(batch)
	ctx, endTrace := e.traceComplete(ctx, batch)
	defer func() { endTrace(err) }()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	ids := make([]uuid.UUID, len(batch))
	claims := make([]uuid.UUID, len(batch))
	for i, o := range batch {
		ids[i], claims[i] = o.job.id, o.job.claimID
	}
	rows, err := tx.Query(ctx, queryLockClaims, ids, claims)
	if err != nil {
		return fmt.Errorf("lock claims: %w", err)
	}
	held := map[uuid.UUID]int64{}
	for rows.Next() {
		var id uuid.UUID
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return err
		}
		held[id] = v
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var w writes
	var stored storageWrites
	for _, o := range batch {
		j, res := o.job, o.result
		v, ok := held[j.id]
		if !ok {
			e.logger.Warn("claim lost before completion; outcome dropped", slog.String("request_id", j.id.String()),
				slog.String("error_kind", res.ErrorKind))
			continue
		}
		j.version = v
		state := stateOf(res)
		a, err := e.sign(ctx, attestationInput{requestID: j.id, attempt: j.attempt, tool: j.tool, principal: j.principal,
			runID: j.runID, inputDigest: j.inputDigest, output: res.Output, executor: j.impl.Executor(), tier: j.impl.Tier(),
			decision: "allow", reason: j.decision.ReasonCode, started: j.started, finished: o.finished, result: res,
			skill: j.skillRef(), trace: j.trace.sc})
		if err != nil {
			return err
		}
		finished := map[string]any{
			"request_id": j.id, "attempt": j.attempt, "state": state, "error_kind": strp(res.ErrorKind),
			"error": strp(res.Error), "timed_out": res.TimedOut, "exit_status": res.ExitStatus,
			"resources": res.Resources, "enforcement": res.Enforcement, "output": res.Output,
			"executor": j.impl.Executor(), "tier": j.impl.Tier(),
		}
		if len(res.Output) == 0 {
			finished["output"] = nil
		}
		events := make([]ledger.NewEvent, 0, len(res.Events)+3)
		var others []ledger.StreamAppend
		for _, ev := range res.Events {
			ne := ledger.NewEvent{Type: ev.Type, Payload: ev.Payload,
				Metadata: traceMeta(ledger.Metadata{Actor: e.cfg.Label, CorrelationID: j.id.String()}, j.trace.toolSpan())}
			if ev.Stream != "" {
				// Events a tool addresses to other streams (channel:<name>)
				// take their streams' next versions.
				others = append(others, ledger.StreamAppend{Stream: ev.Stream, Expected: ledger.AnyVersion, Events: []ledger.NewEvent{ne}})
				continue
			}
			events = append(events, ne)
		}
		events = append(events, ledger.NewEvent{Type: "execution.finished", Payload: finished, Metadata: e.meta(j)})
		if state == "cancelled" {
			events = append(events, ledger.NewEvent{Type: "request.cancelled", Payload: map[string]any{
				"request_id": j.id, "reason": res.Error, "previous_state": "running"}, Metadata: e.meta(j)})
		}
		events = append(events, a.event)
		w.events(j.id, j.claimID, ledger.StreamAppend{Stream: j.stream(), Expected: j.version, Events: events})
		for _, sa := range others {
			w.other(sa)
		}
		w.finish(j.id, j.claimID, state, res, j.impl.Tier())
		if state == "succeeded" {
			stored.add(res.StorageWrites)
		}
	}
	if w.finished == 0 {
		return tx.Commit(ctx)
	}
	if err := w.exec(ctx, tx, e.store, e.cfg.ApprovalTimeout); err != nil {
		return err
	}
	if err := stored.exec(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	e.metrics.completed(w.finished)
	for _, o := range batch {
		if _, ok := held[o.job.id]; ok {
			e.metrics.finish(e, o.job.tool, stateOf(o.result), o.result.ErrorKind, o.job.submittedAt)
		}
	}
	return nil
}

// stateOf is the final state a call's result puts its request in.
func stateOf(res Result) string {
	switch res.ErrorKind {
	case "":
		return "succeeded"
	case "cancelled":
		return "cancelled"
	}
	return "failed"
}

// isDataError reports whether err is PostgreSQL refusing a value (SQLSTATE
// class 22, data exception), which no retry fixes.
func isDataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22")
}

// completeEach writes a batch one outcome per transaction. An outcome the
// database refuses is replaced by a runtime_failure, so that its request
// still ends and is attested.
func (e *Executor) completeEach(ctx context.Context, batch []outcome) {
	for _, o := range batch {
		err := e.complete(ctx, []outcome{o})
		if err != nil && isDataError(err) {
			e.logger.Error("complete: outcome refused by the database; recording a runtime_failure",
				slog.String("request_id", o.job.id.String()), slog.Any("error", err))
			o.result = failure("runtime_failure", o.job.tool+": its result could not be stored ("+err.Error()+")")
			err = e.complete(ctx, []outcome{o})
		}
		if err != nil {
			e.logger.Error("complete: giving up on one outcome; its lease will expire",
				slog.String("request_id", o.job.id.String()), slog.Any("error", err))
		}
	}
}
