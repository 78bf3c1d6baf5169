package executor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// claim takes up to n requests and authorizes them in one transaction:
// the claim, every decision, the budget each allowed call consumes and the
// denials' outcomes commit together or not at all. Allowed calls start
// once it has committed. It returns how many requests it claimed.
func (e *Executor) claim(ctx context.Context, n int) (_ int, err error) {
	began := time.Now()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin claim: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	jobs, err := e.claimRows(ctx, tx, n)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	// The claim query itself is not traced: most polls claim nothing, and
	// a trace per empty poll would bury the requests' traces.
	ctx, batchSpan, claimSpans := e.traceClaimed(ctx, jobs, began)
	var running map[*job]bool // which claimed jobs go on to run, for their spans
	if batchSpan != nil {
		running = map[*job]bool{}
	}
	ended := false
	defer func() {
		if !ended {
			endClaim(jobs, batchSpan, claimSpans, err, running)
		}
	}()
	if err := e.resolveSkills(ctx, tx, jobs); err != nil {
		return 0, err
	}
	budgets, err := e.lockBudgets(ctx, tx, jobs)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var (
		w               writes
		toRun           []*job
		deniedTools     []string
		deniedKinds     []string
		deniedSubmitted []time.Time
	)
	for _, j := range jobs {
		endAuthorize := e.traceAuthorize(j)
		g := e.authorize(j, budgets)
		j.decision = g.decision
		sa := ledger.StreamAppend{Stream: j.stream(), Expected: j.version}
		sa.Events = append(sa.Events, e.decisionEvent(j, g))
		j.next()
		switch g.verdict {
		case verdictDeny:
			res := failure(g.errorKind, g.message)
			a, err := e.sign(ctx, attestationInput{requestID: j.id, attempt: j.attempt, tool: j.tool, principal: j.principal,
				runID: j.runID, inputDigest: j.inputDigest, executor: "policy", decision: "deny", reason: g.decision.ReasonCode,
				started: now, finished: now, result: res, skill: j.skillRef(), trace: j.trace.sc})
			if err != nil {
				return 0, err
			}
			sa.Events = append(sa.Events, a.event)
			j.next()
			w.finish(j.id, j.claimID, "denied", res, "")
			deniedTools, deniedKinds = append(deniedTools, j.tool), append(deniedKinds, res.ErrorKind)
			deniedSubmitted = append(deniedSubmitted, j.submittedAt)
		case verdictAwaitApproval:
			sa.Events = append(sa.Events, ledger.NewEvent{Type: "approval.requested", Payload: map[string]any{
				"request_id": j.id, "tool": j.tool, "input_digest": "sha256:" + hex.EncodeToString(j.inputDigest),
				"expires_in_ms": e.cfg.ApprovalTimeout.Milliseconds(), "reason": approvalReason(j),
			}, Metadata: e.meta(j)})
			j.next()
			w.transition(j.id, j.claimID, transAwaitApproval, false)
		case verdictRun:
			if g.charge {
				b := budgets[runKey{j.principal, j.runID}]
				sa.Events = append(sa.Events, ledger.NewEvent{Type: "budget.consumed", Payload: map[string]any{
					"request_id": j.id, "run_id": j.runID, "principal": j.principal, "used": b.used, "max_calls": b.max,
				}, Metadata: e.meta(j)})
				j.next()
			}
			endAuthorize(g) // execution.started is the claim's
			sa.Events = append(sa.Events, ledger.NewEvent{Type: "execution.started", Payload: map[string]any{
				"request_id": j.id, "attempt": j.attempt, "executor": j.impl.Executor(), "tier": j.impl.Tier(),
				"timeout_ms": e.cfg.ToolTimeout.Milliseconds(),
			}, Metadata: e.meta(j)})
			j.next()
			w.transition(j.id, j.claimID, transStart, g.charge)
			toRun = append(toRun, j)
		}
		endAuthorize(g)
		w.events(j.id, j.claimID, sa)
	}
	if err := w.exec(ctx, tx, e.store, e.cfg.ApprovalTimeout); err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit claim: %w", err)
	}
	e.metrics.claimed(len(jobs))
	for _, j := range jobs {
		decision := "allow"
		if !j.decision.Allowed {
			decision = "deny"
		}
		e.metrics.decide(decision, j.decision.ReasonCode)
	}
	for i := range deniedTools {
		e.metrics.finish(e, deniedTools[i], "denied", deniedKinds[i], deniedSubmitted[i])
	}
	if running != nil {
		for _, j := range toRun {
			running[j] = true
		}
	}
	endClaim(jobs, batchSpan, claimSpans, nil, running)
	ended = true
	for _, j := range toRun {
		e.start(j)
	}
	return len(jobs), nil
}

func (e *Executor) claimRows(ctx context.Context, tx pgx.Tx, n int) ([]*job, error) {
	rows, err := tx.Query(ctx, queryClaim, e.cfg.Label, n, e.cfg.Lease.String())
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	var jobs []*job
	for rows.Next() {
		j := &job{}
		var input, reqCtx string
		var bound []string
		if err := rows.Scan(&j.id, &j.claimID, &j.attempt, &j.version, &j.principal, &j.tool, &j.runID, &input, &reqCtx,
			&bound, &j.inputDigest, &j.approved, &j.wasCharged, &j.submittedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim: %w", err)
		}
		j.input = json.RawMessage(input)
		if err := json.Unmarshal([]byte(reqCtx), &j.context); err != nil {
			e.logger.Warn("request context unreadable", slog.String("request_id", j.id.String()), slog.Any("error", err))
		}
		j.channelBound, j.deviceBound = slices.Contains(bound, "channel"), slices.Contains(bound, "device")
		j.impl = e.tools[j.tool]
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return jobs, nil
}

func (e *Executor) meta(j *job) ledger.Metadata {
	return traceMeta(ledger.Metadata{Actor: e.cfg.Label, CorrelationID: j.id.String()}, j.trace.sc)
}

// decisionEvent records one pipeline decision.
func (e *Executor) decisionEvent(j *job, g gate) ledger.NewEvent {
	errs := g.decision.Errors
	if errs == nil {
		errs = []string{}
	}
	pols := g.decision.DeterminingPolicies
	if pols == nil {
		pols = []string{}
	}
	decision := "allow"
	if g.verdict == verdictDeny {
		decision = "deny"
	}
	p := map[string]any{
		"request_id":           j.id,
		"decision":             decision,
		"stage":                g.stage,
		"reason_code":          g.decision.ReasonCode,
		"action":               g.decision.Action,
		"determining_policies": pols,
		"errors":               errs,
		"policy_digest":        e.policy.Digest(),
		"sensitive":            e.sensitiveJob(j),
		"approved":             j.approved,
	}
	if g.verdict == verdictDeny {
		p["error_kind"] = g.errorKind
		p["message"] = g.message
	}
	if s := j.skillRef(); s != nil {
		p["skill"] = s
	}
	return ledger.NewEvent{Type: "policy.decided", Payload: p, Metadata: e.meta(j)}
}
