package executor

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/execledger/execledger/internal/retry"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/ledger"
)

// settledJobs is what the completer tells the runner: these jobs' outcomes
// are written, or given up on.
type settledJobs interface{ settled(batch []outcome) }

// completer writes finished calls in batches: whatever has finished while
// the previous batch was being written goes into the next transaction, so
// throughput comes from fewer, larger transactions without delaying a
// lone completion.
type completer struct {
	rec       *recorder
	batchSize int // Config.CompleteBatch
	in        chan outcome
	jobs      settledJobs
	tools     *toolSet
	metrics   *Metrics
	tracing   tracing
	logger    *slog.Logger
	hooks     *testHooks
}

// run completes until in is closed and drained.
func (c *completer) run(ctx context.Context) {
	for {
		first, ok := <-c.in
		if !ok {
			return
		}
		batch := []outcome{first}
	drain:
		for len(batch) < c.batchSize {
			select {
			case o, ok := <-c.in:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		c.hooks.reach(hookCompleteBegin)
		c.completeWithRetry(ctx, batch)
		c.hooks.reach(hookCompleteEnd)
	}
}
func (c *completer) completeWithRetry(ctx context.Context, batch []outcome) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.complete(ctx, batch)
		if err == nil {
			break
		}
		if isDataError(err) {
			// Something in one outcome cannot be stored: write the others,
			// and the culprit as a runtime_failure, one at a time.
			c.logger.Error("complete: an outcome cannot be stored; writing the batch one by one", slog.Any("error", err))
			c.completeEach(ctx, batch)
			break
		}
		if attempt == 8 || ctx.Err() != nil {
			// The leases will expire and the rescuer will settle these requests.
			c.logger.Error("complete: giving up; leases will expire", slog.Int("requests", len(batch)), slog.Any("error", err))
			break
		}
		c.logger.Warn("complete: retrying", slog.Int("attempt", attempt), slog.Any("error", err))
		retry.Sleep(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
	c.jobs.settled(batch)
}

// complete writes one batch in one transaction: the outcome and its
// attestation for each request whose claim is still this executor's,
// the read model, the queue, the NOTIFYs, and the storage writes of those
// of its calls that succeeded (Result.StorageWrites): an outcome dropped
// because its claim was lost, or a failure, writes nothing.
func (c *completer) complete(ctx context.Context, batch []outcome) (err error) {
	c.refuseUnstorable(batch)
	ctx, endTrace := c.tracing.complete(ctx, batch)
	defer func() { endTrace(err) }()
	ids := make([]uuid.UUID, len(batch))
	claims := make([]uuid.UUID, len(batch))
	for i, o := range batch {
		ids[i], claims[i] = o.job.id, o.job.claimID
	}
	held := map[uuid.UUID]bool{}
	_, err = settle(ctx, c.rec, queryLockClaims, []any{ids, claims}, pgx.RowToStructByPos[heldClaim],
		func(ctx context.Context, tx pgx.Tx, locked []heldClaim, w *writes) error {
			versions := make(map[uuid.UUID]int64, len(locked))
			for _, h := range locked {
				versions[h.ID] = h.Version
			}
			var stored storageWrites
			for _, o := range batch {
				j := o.job
				v, ok := versions[j.id]
				if !ok {
					c.logger.Warn("claim lost before completion; outcome dropped", slog.String("request_id", j.id.String()),
						slog.String("error_kind", string(o.result.ErrorKind)))
					continue
				}
				j.version = v
				if err := c.finish(ctx, o, w); err != nil {
					return err
				}
				held[j.id] = true
				if o.result.State() == ledger.StateSucceeded {
					stored.add(o.result.StorageWrites)
				}
			}
			return stored.exec(ctx, tx)
		})
	if err != nil {
		return err
	}
	if len(held) > 0 {
		c.metrics.completed(len(held))
	}
	for _, o := range batch {
		if held[o.job.id] {
			c.metrics.finish(c.tools.label(o.job.tool), o.result.State(), o.result.ErrorKind, o.job.submittedAt)
		}
	}
	return nil
}

// heldClaim is a queue row ledger.lock_claims locked.
type heldClaim struct {
	ID      uuid.UUID
	Version int64
}

// finish writes one outcome (recorder.outcome) under the claim the batch
// locked.
func (c *completer) finish(ctx context.Context, o outcome, w *writes) error {
	j, res := o.job, o.result
	events, others, err := c.rec.outcome(ctx, j, res, o.finished)
	if err != nil {
		return err
	}
	w.events(j.id, j.claimID, ledger.StreamAppend{Stream: j.stream(), Expected: j.version, Events: events})
	for _, sa := range others {
		w.other(sa)
	}
	w.finish(j.id, j.claimID, res.State(), res, j.impl.Tier())
	return nil
}

// outcome is what records a call's outcome on its request's stream: the
// tool's events, then execution.completed (the outcome with its
// attestation), or for a cancelled call execution.finished,
// request.cancelled and attestation.signed; and the tool's events
// addressed to other streams (channel:<name>), at their next versions.
func (r *recorder) outcome(ctx context.Context, j *job, res Result, finished time.Time) ([]ledger.NewEvent, []ledger.StreamAppend, error) {
	state := res.State()
	a, err := r.sign(ctx, attestationInput{requestID: j.id, attempt: j.attempt, tool: j.tool, principal: j.principal,
		runID: j.runID, inputDigest: j.inputDigest, output: res.Output, executor: j.impl.Executor(), tier: j.impl.Tier(),
		decision: "allow", reason: j.decision.ReasonCode, policyDigest: j.decision.PolicyDigest, started: j.started, finished: finished, result: res,
		skill: j.skillRef(), trace: j.trace.sc})
	if err != nil {
		return nil, nil, err
	}
	payload := map[string]any{
		"request_id": j.id, "attempt": j.attempt, "state": state, "error_kind": strp(string(res.ErrorKind)),
		"error": strp(res.Error), "timed_out": res.TimedOut, "exit_status": res.ExitStatus,
		"resources": res.Resources, "enforcement": res.Enforcement, "output": res.Output,
		"executor": j.impl.Executor(), "tier": j.impl.Tier(),
	}
	if len(res.Output) == 0 {
		payload["output"] = nil
	}
	events := make([]ledger.NewEvent, 0, len(res.Events)+3)
	var others []ledger.StreamAppend
	for _, ev := range res.Events {
		ne := ledger.NewEvent{Type: ev.Type, Payload: ev.Payload, Metadata: r.meta(j.id, j.trace.toolSpan())}
		if ev.Stream != "" {
			others = append(others, ledger.StreamAppend{Stream: ev.Stream, Expected: ledger.AnyVersion, Events: []ledger.NewEvent{ne}})
			continue
		}
		events = append(events, ne)
	}
	if state == ledger.StateCancelled {
		// The full grammar: request.cancelled comes between the outcome
		// and its attestation.
		events = append(events, ledger.NewEvent{Type: "execution.finished", Payload: payload, Metadata: r.meta(j.id, j.trace.sc)},
			ledger.NewEvent{Type: "request.cancelled", Payload: map[string]any{
				"request_id": j.id, "reason": res.Error, "previous_state": ledger.StateRunning}, Metadata: r.meta(j.id, j.trace.sc)},
			a.event)
	} else {
		// The compact grammar (021): the outcome and its attestation as
		// one event.
		for k, v := range a.members() {
			payload[k] = v
		}
		events = append(events, ledger.NewEvent{Type: "execution.completed", Payload: payload, Metadata: r.meta(j.id, j.trace.sc)})
	}
	return events, others, nil
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
func (c *completer) completeEach(ctx context.Context, batch []outcome) {
	for _, o := range batch {
		err := c.complete(ctx, []outcome{o})
		if err != nil && isDataError(err) {
			c.logger.Error("complete: outcome refused by the database; recording a runtime_failure",
				slog.String("request_id", o.job.id.String()), slog.Any("error", err))
			o.result = failure(ledger.KindRuntimeFailure, o.job.tool+": its result could not be stored ("+err.Error()+")")
			err = c.complete(ctx, []outcome{o})
		}
		if err != nil {
			c.logger.Error("complete: giving up on one outcome; its lease will expire",
				slog.String("request_id", o.job.id.String()), slog.Any("error", err))
		}
	}
}
