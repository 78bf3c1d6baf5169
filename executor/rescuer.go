package executor

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/execledger/execledger/internal/contract"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Actions a lease.expired event records.
const (
	rescueRequeued       = "requeued"
	rescueCancelled      = "cancelled"
	rescueOutcomeUnknown = "outcome_unknown"
	rescueAbandoned      = "abandoned"
)

// rescuer settles what no executor is looking after: expired leases,
// expired approvals, and requests that ended in SQL without an attestation.
type rescuer struct {
	rec         *recorder
	tools       *toolSet
	interval    time.Duration // Config.RescueInterval
	maxAttempts int           // Config.MaxAttempts
	metrics     *Metrics
	logger      *slog.Logger
	requeued    func() // work went back to pending: the claimer may claim it
}

func (r *rescuer) run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		for _, step := range []struct {
			name string
			fn   func(context.Context) (int, error)
		}{{"rescue leases", r.rescueLeases}, {"expire approvals", r.expireApprovals}, {"attest", r.attestEnded}} {
			if n, err := step.fn(ctx); err != nil && ctx.Err() == nil {
				r.logger.Warn(step.name, slog.Any("error", err))
			} else if n > 0 {
				r.logger.Info(step.name, slog.Int("requests", n))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expiredLease is a claim whose lease ran out (ledger.lock_expired_leases).
type expiredLease struct {
	ID, ClaimID              uuid.UUID
	Attempt                  int
	ClaimedBy                *string
	Version                  int64
	Started, CancelRequested bool
	Tool, Principal, RunID   string
	InputDigest              []byte
}

// rescueLeases handles claims whose lease expired. The rows are locked and
// re-checked in one transaction, so a request completed or re-claimed
// meanwhile is untouched. A request that had not started, or whose tool is
// safe to repeat, goes back to pending in its place; a cancelled one ends
// cancelled; one lost on its last attempt ends failed (runtime_failure);
// any other ends failed with outcome_unknown.
func (r *rescuer) rescueLeases(ctx context.Context) (int, error) {
	var actions []string // per settled request, for the metrics
	list, err := settle(ctx, r.rec, queryExpiredLeases, []any{100}, pgx.RowToStructByPos[expiredLease],
		func(ctx context.Context, tx pgx.Tx, list []expiredLease, w *writes) error {
			traces, err := requestTraces(ctx, tx, idsOf(list, func(x expiredLease) uuid.UUID { return x.ID }))
			if err != nil {
				return err
			}
			now := time.Now()
			for _, x := range list {
				impl := r.tools.get(x.Tool)
				safe := impl != nil && impl.SafeToRepeat()
				action := rescueRequeued
				switch {
				case x.CancelRequested:
					action = rescueCancelled
				case x.Started && !safe:
					action = rescueOutcomeUnknown
				case x.Attempt >= r.maxAttempts:
					action = rescueAbandoned // lost on every attempt: not requeued again (Config.MaxAttempts)
				}
				by := ""
				if x.ClaimedBy != nil {
					by = *x.ClaimedBy
				}
				expired := map[string]any{"request_id": x.ID, "claim_id": x.ClaimID, "executor": by, "started": x.Started,
					"safe_to_repeat": safe, "action": action, "rescued_by": r.rec.label}
				sa := ledger.StreamAppend{Stream: contract.RequestStream(x.ID.String()), Expected: x.Version, Events: []ledger.NewEvent{{
					Type: "lease.expired", Payload: expired, Metadata: r.rec.meta(x.ID, traces[x.ID]),
				}}}
				if action == rescueRequeued {
					w.events(x.ID, x.ClaimID, sa)
					w.transition(x.ID, x.ClaimID, transRequeue, false)
					actions = append(actions, rescueRequeued)
					continue
				}
				res := failure(ledger.KindOutcomeUnknown, fmt.Sprintf("executor %s stopped after %s started; %s is not safe to repeat", by, x.Tool, x.Tool))
				switch action {
				case rescueCancelled:
					res = failure(ledger.KindCancelled, "cancelled while its executor was gone")
				case rescueAbandoned:
					res = failure(ledger.KindRuntimeFailure, fmt.Sprintf("its lease was lost on each of %d attempts (executor %s the last); not requeued again", x.Attempt, by))
				}
				state := res.State()
				executor, tier := "unknown", ""
				if impl != nil {
					executor, tier = impl.Executor(), impl.Tier()
				}
				// The outcome, for the read models made from the event.
				expired["state"], expired["error_kind"], expired["error"], expired["tier"] = state, res.ErrorKind, res.Error, strp(tier)
				a, err := r.rec.sign(ctx, attestationInput{requestID: x.ID, attempt: x.Attempt, tool: x.Tool, principal: x.Principal, runID: x.RunID,
					inputDigest: x.InputDigest, executor: executor, tier: tier, decision: "allow", reason: "lease.expired",
					started: now, finished: now, result: res, trace: traces[x.ID]})
				if err != nil {
					return err
				}
				sa.Events = append(sa.Events, a.event)
				w.events(x.ID, x.ClaimID, sa)
				w.finish(x.ID, x.ClaimID, state, res, tier)
				actions = append(actions, string(res.ErrorKind))
			}
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("rescue: %w", err)
	}
	requeued := false
	for _, a := range actions {
		r.metrics.rescued(a)
		requeued = requeued || a == rescueRequeued
	}
	if requeued {
		r.requeued()
	}
	return len(list), nil
}

// idsOf is the request ids of list, in order.
func idsOf[T any](list []T, id func(T) uuid.UUID) []uuid.UUID {
	ids := make([]uuid.UUID, len(list))
	for i, x := range list {
		ids[i] = id(x)
	}
	return ids
}

// expiredApproval is a request that waited too long for approval
// (ledger.lock_expired_approvals).
type expiredApproval struct {
	ID                     uuid.UUID
	Version                int64
	Tool, Principal, RunID string
	InputDigest            []byte
}

// expireApprovals denies requests that waited longer than ApprovalTimeout.
func (r *rescuer) expireApprovals(ctx context.Context) (int, error) {
	list, err := settle(ctx, r.rec, queryExpiredApprovals, []any{100}, pgx.RowToStructByPos[expiredApproval],
		func(ctx context.Context, tx pgx.Tx, list []expiredApproval, wr *writes) error {
			traces, err := requestTraces(ctx, tx, idsOf(list, func(w expiredApproval) uuid.UUID { return w.ID }))
			if err != nil {
				return err
			}
			now := time.Now()
			for _, w := range list {
				res := failure(ledger.KindApprovalDenied, fmt.Sprintf("no approval within %s", r.rec.approvalTimeout))
				a, err := r.rec.sign(ctx, attestationInput{requestID: w.ID, tool: w.Tool, principal: w.Principal, runID: w.RunID,
					inputDigest: w.InputDigest, executor: "policy", decision: "deny", reason: "approval.expired",
					started: now, finished: now, result: res, trace: traces[w.ID]})
				if err != nil {
					return err
				}
				// No claim: an expired approval is anyone's to settle.
				wr.events(w.ID, uuid.Nil, ledger.StreamAppend{Stream: contract.RequestStream(w.ID.String()), Expected: w.Version, Events: []ledger.NewEvent{
					// The shape of ledger.deny_approval's (contract.Events):
					// no approver, no note; the digest the request waited with.
					{Type: "approval.denied", Payload: map[string]any{"request_id": w.ID, "reason": "expired",
						"approver": nil, "note": nil, "input_digest": "sha256:" + hex.EncodeToString(w.InputDigest),
						"previous_state": ledger.StateAwaitingApproval,
						"timeout_ms":     r.rec.approvalTimeout.Milliseconds(), "error": res.Error},
						Metadata: r.rec.meta(w.ID, traces[w.ID])},
					a.event,
				}})
				wr.finish(w.ID, uuid.Nil, ledger.StateDenied, res, "")
			}
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("expire approvals: %w", err)
	}
	return len(list), nil
}

// endedRequest is a request that reached a final state in SQL and still
// lacks an attestation (ledger.lock_unattested).
type endedRequest struct {
	ID                                  uuid.UUID
	Tool, Principal, RunID, State, Kind string
	Msg                                 string
	InputDigest                         []byte
	Submitted, Finished                 time.Time
	Version                             int64
}

// attestEnded signs attestations for requests that reached a final state
// in SQL (cancelled while pending, approval denied by an approver).
func (r *rescuer) attestEnded(ctx context.Context) (int, error) {
	list, err := settle(ctx, r.rec, queryUnattested, []any{100}, pgx.RowToStructByPos[endedRequest],
		func(ctx context.Context, tx pgx.Tx, list []endedRequest, w *writes) error {
			traces, err := requestTraces(ctx, tx, idsOf(list, func(x endedRequest) uuid.UUID { return x.ID }))
			if err != nil {
				return err
			}
			for _, x := range list {
				reason := "request.cancelled"
				if ledger.ErrorKind(x.Kind) == ledger.KindApprovalDenied {
					reason = "approval.denied"
				}
				a, err := r.rec.sign(ctx, attestationInput{requestID: x.ID, tool: x.Tool, principal: x.Principal, runID: x.RunID,
					inputDigest: x.InputDigest, executor: "policy", decision: "deny", reason: reason,
					started: x.Submitted, finished: x.Finished, result: failure(ledger.ErrorKind(x.Kind), x.Msg), trace: traces[x.ID]})
				if err != nil {
					return err
				}
				w.events(x.ID, uuid.Nil, ledger.StreamAppend{Stream: contract.RequestStream(x.ID.String()), Expected: x.Version,
					Events: []ledger.NewEvent{a.event}})
				w.transition(x.ID, uuid.Nil, transAttest, false)
			}
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("attest: %w", err)
	}
	return len(list), nil
}
