package executor

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
)

// heartbeat extends the leases of every claim this executor holds, in one
// statement, every third of a lease. A claim that is no longer ours (it
// was rescued) has its call stopped; a claim flagged by ledger.cancel has
// its call cancelled, covering a lost cancel NOTIFY.
func (e *Executor) heartbeat(ctx context.Context) {
	t := time.NewTicker(e.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.beat(ctx); err != nil && ctx.Err() == nil {
			e.logger.Warn("heartbeat", slog.Any("error", err))
		}
	}
}

// inflightClaims lists the requests this executor holds and their claims,
// in id order (the order every statement that locks queue rows uses).
func (e *Executor) inflightClaims() (ids, claims []uuid.UUID) {
	e.mu.Lock()
	ids = make([]uuid.UUID, 0, len(e.inflight))
	claims = make([]uuid.UUID, 0, len(e.inflight))
	for _, j := range e.inflight {
		ids, claims = append(ids, j.id), append(claims, j.claimID)
	}
	e.mu.Unlock()
	sortClaims(ids, claims)
	return ids, claims
}

func (e *Executor) beat(ctx context.Context) error {
	ids, claims := e.inflightClaims()
	if len(ids) == 0 {
		return nil
	}
	rows, err := e.pool.Query(ctx, queryHeartbeat, ids, claims, e.cfg.Lease.String())
	if err != nil {
		return err
	}
	held := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		var cancel bool
		if err := rows.Scan(&id, &cancel); err != nil {
			rows.Close()
			return err
		}
		held[id] = true
		if cancel {
			e.cancelJob(id, errCancelled)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if held[id] {
			continue
		}
		e.mu.Lock()
		j := e.inflight[id]
		e.mu.Unlock()
		// A call that has returned was completed (or will find its claim
		// gone at completion); only a running call has lost something.
		if j != nil && !j.done.Load() {
			e.logger.Warn("lease lost; stopping the call", slog.String("request_id", id.String()))
			j.cancel(errLeaseLost)
		}
	}
	return nil
}

// sortClaims orders ids (and their claims alongside) so that every
// statement that locks several queue rows locks them in one order.
func sortClaims(ids, claims []uuid.UUID) {
	idx := make([]int, len(ids))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return bytes.Compare(ids[idx[a]][:], ids[idx[b]][:]) < 0 })
	si, sc := make([]uuid.UUID, len(ids)), make([]uuid.UUID, len(ids))
	for k, i := range idx {
		si[k], sc[k] = ids[i], claims[i]
	}
	copy(ids, si)
	copy(claims, sc)
}

// rescuer settles what no executor is looking after: expired leases,
// expired approvals, and requests that ended in SQL without an attestation.
func (e *Executor) rescuer(ctx context.Context) {
	t := time.NewTicker(e.cfg.RescueInterval)
	defer t.Stop()
	for {
		for _, step := range []struct {
			name string
			fn   func(context.Context) (int, error)
		}{{"rescue leases", e.rescueLeases}, {"expire approvals", e.expireApprovals}, {"attest", e.attestEnded}} {
			if n, err := step.fn(ctx); err != nil && ctx.Err() == nil {
				e.logger.Warn(step.name, slog.Any("error", err))
			} else if n > 0 {
				e.logger.Info(step.name, slog.Int("requests", n))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rescueLeases handles claims whose lease expired. The rows are locked and
// re-checked in one transaction, so a request completed or re-claimed
// meanwhile is untouched. A request that had not started, or whose tool is
// safe to repeat, goes back to pending; a cancelled one ends cancelled; any
// other ends failed with outcome_unknown.
func (e *Executor) rescueLeases(ctx context.Context) (int, error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, queryExpiredLeases, 100)
	if err != nil {
		return 0, err
	}
	type expired struct {
		id, claimID              uuid.UUID
		attempt                  int
		claimedBy                *string
		version                  int64
		started, cancelRequested bool
		tool, principal, runID   string
		inputDigest              []byte
	}
	var list []expired
	for rows.Next() {
		var x expired
		if err := rows.Scan(&x.id, &x.claimID, &x.attempt, &x.claimedBy, &x.version, &x.started, &x.cancelRequested,
			&x.tool, &x.principal, &x.runID, &x.inputDigest); err != nil {
			rows.Close()
			return 0, err
		}
		list = append(list, x)
	}
	if err := rows.Err(); err != nil || len(list) == 0 {
		return 0, err
	}
	ids := make([]uuid.UUID, len(list))
	for i, x := range list {
		ids[i] = x.id
	}
	traces, err := requestTraces(ctx, tx, ids)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var w writes
	var requeued int
	var kinds []string
	for _, x := range list {
		impl := e.tools[x.tool]
		safe := impl != nil && impl.SafeToRepeat()
		action := "requeued"
		switch {
		case x.cancelRequested:
			action = "cancelled"
		case x.started && !safe:
			action = "outcome_unknown"
		case x.attempt >= e.cfg.MaxAttempts:
			action = "abandoned" // lost on every attempt: not requeued again (Config.MaxAttempts)
		}
		by := ""
		if x.claimedBy != nil {
			by = *x.claimedBy
		}
		expired := map[string]any{"request_id": x.id, "claim_id": x.claimID, "executor": by, "started": x.started,
			"safe_to_repeat": safe, "action": action, "rescued_by": e.cfg.Label}
		sa := ledger.StreamAppend{Stream: "request:" + x.id.String(), Expected: x.version, Events: []ledger.NewEvent{{
			Type: "lease.expired", Payload: expired,
			Metadata: traceMeta(ledger.Metadata{Actor: e.cfg.Label, CorrelationID: x.id.String()}, traces[x.id]),
		}}}
		if action == "requeued" {
			w.events(x.id, x.claimID, sa)
			w.transition(x.id, x.claimID, transRequeue, false)
			requeued++
			continue
		}
		res := failure("outcome_unknown", fmt.Sprintf("executor %s stopped after %s started; %s is not safe to repeat", by, x.tool, x.tool))
		state := "failed"
		switch action {
		case "cancelled":
			res, state = failure("cancelled", "cancelled while its executor was gone"), "cancelled"
		case "abandoned":
			res = failure("runtime_failure", fmt.Sprintf("its lease was lost on each of %d attempts (executor %s the last); not requeued again", x.attempt, by))
		}
		executor, tier := "unknown", ""
		if impl != nil {
			executor, tier = impl.Executor(), impl.Tier()
		}
		// The outcome, for the read models made from the event.
		expired["state"], expired["error_kind"], expired["error"], expired["tier"] = state, res.ErrorKind, res.Error, strp(tier)
		a, err := e.sign(ctx, attestationInput{requestID: x.id, attempt: x.attempt, tool: x.tool, principal: x.principal, runID: x.runID,
			inputDigest: x.inputDigest, executor: executor, tier: tier, decision: "allow", reason: "lease.expired",
			started: now, finished: now, result: res, trace: traces[x.id]})
		if err != nil {
			return 0, err
		}
		sa.Events = append(sa.Events, a.event)
		w.events(x.id, x.claimID, sa)
		w.finish(x.id, x.claimID, state, res, tier)
		kinds = append(kinds, res.ErrorKind)
	}
	if err := w.exec(ctx, tx, e.store, e.cfg.ApprovalTimeout); err != nil {
		return 0, fmt.Errorf("rescue: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	for range requeued {
		e.metrics.rescued("requeued")
	}
	for _, k := range kinds {
		e.metrics.rescued(k)
	}
	if requeued > 0 {
		e.poke()
	}
	return len(list), nil
}

// expireApprovals denies requests that waited longer than ApprovalTimeout.
func (e *Executor) expireApprovals(ctx context.Context) (int, error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, queryExpiredApprovals, 100)
	if err != nil {
		return 0, err
	}
	type waiting struct {
		id                     uuid.UUID
		version                int64
		tool, principal, runID string
		inputDigest            []byte
	}
	var list []waiting
	for rows.Next() {
		var w waiting
		if err := rows.Scan(&w.id, &w.version, &w.tool, &w.principal, &w.runID, &w.inputDigest); err != nil {
			rows.Close()
			return 0, err
		}
		list = append(list, w)
	}
	if err := rows.Err(); err != nil || len(list) == 0 {
		return 0, err
	}
	ids := make([]uuid.UUID, len(list))
	for i, w := range list {
		ids[i] = w.id
	}
	traces, err := requestTraces(ctx, tx, ids)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var wr writes
	for _, w := range list {
		res := failure("approval_denied", fmt.Sprintf("no approval within %s", e.cfg.ApprovalTimeout))
		a, err := e.sign(ctx, attestationInput{requestID: w.id, tool: w.tool, principal: w.principal, runID: w.runID,
			inputDigest: w.inputDigest, executor: "policy", decision: "deny", reason: "approval.expired",
			started: now, finished: now, result: res, trace: traces[w.id]})
		if err != nil {
			return 0, err
		}
		// No claim: an expired approval is anyone's to settle.
		wr.events(w.id, uuid.Nil, ledger.StreamAppend{Stream: "request:" + w.id.String(), Expected: w.version, Events: []ledger.NewEvent{
			{Type: "approval.denied", Payload: map[string]any{"request_id": w.id, "reason": "expired",
				"timeout_ms": e.cfg.ApprovalTimeout.Milliseconds(), "error": res.Error},
				Metadata: traceMeta(ledger.Metadata{Actor: e.cfg.Label, CorrelationID: w.id.String()}, traces[w.id])},
			a.event,
		}})
		wr.finish(w.id, uuid.Nil, "denied", res, "")
	}
	if err := wr.exec(ctx, tx, e.store, e.cfg.ApprovalTimeout); err != nil {
		return 0, fmt.Errorf("expire approvals: %w", err)
	}
	return len(list), tx.Commit(ctx)
}

// attestEnded signs attestations for requests that reached a final state
// in SQL (cancelled while pending, approval denied by an approver).
func (e *Executor) attestEnded(ctx context.Context) (int, error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, queryUnattested, 100)
	if err != nil {
		return 0, err
	}
	type ended struct {
		id                                  uuid.UUID
		tool, principal, runID, state, kind string
		msg                                 string
		inputDigest                         []byte
		submitted, finished                 time.Time
		version                             int64
	}
	var list []ended
	for rows.Next() {
		var x ended
		if err := rows.Scan(&x.id, &x.tool, &x.principal, &x.runID, &x.state, &x.kind, &x.msg, &x.inputDigest,
			&x.submitted, &x.finished, &x.version); err != nil {
			rows.Close()
			return 0, err
		}
		list = append(list, x)
	}
	if err := rows.Err(); err != nil || len(list) == 0 {
		return 0, err
	}
	ids := make([]uuid.UUID, len(list))
	for i, x := range list {
		ids[i] = x.id
	}
	traces, err := requestTraces(ctx, tx, ids)
	if err != nil {
		return 0, err
	}
	var w writes
	for _, x := range list {
		reason := "request.cancelled"
		if x.kind == "approval_denied" {
			reason = "approval.denied"
		}
		a, err := e.sign(ctx, attestationInput{requestID: x.id, tool: x.tool, principal: x.principal, runID: x.runID,
			inputDigest: x.inputDigest, executor: "policy", decision: "deny", reason: reason,
			started: x.submitted, finished: x.finished, result: failure(x.kind, x.msg), trace: traces[x.id]})
		if err != nil {
			return 0, err
		}
		w.events(x.id, uuid.Nil, ledger.StreamAppend{Stream: "request:" + x.id.String(), Expected: x.version,
			Events: []ledger.NewEvent{a.event}})
		w.transition(x.id, uuid.Nil, transAttest, false)
	}
	if err := w.exec(ctx, tx, e.store, e.cfg.ApprovalTimeout); err != nil {
		return 0, fmt.Errorf("attest: %w", err)
	}
	return len(list), tx.Commit(ctx)
}
