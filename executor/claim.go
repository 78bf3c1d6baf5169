package executor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// claim takes up to n requests and authorizes them in one transaction:
// the claim, every decision, the budget each allowed call consumes and the
// denials' outcomes commit together or not at all. Allowed calls start
// once it has committed. It returns how many requests it claimed.
func (e *Executor) claim(ctx context.Context, n int) (int, error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin claim: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	jobs, err := e.claimRows(ctx, tx, n)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	budgets, err := e.lockBudgets(ctx, tx, jobs)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var (
		batch            []ledger.StreamAppend
		startIDs         []uuid.UUID
		startVers        []int64
		startCharge      []bool
		awaitIDs         []uuid.UUID
		awaitVers        []int64
		chargeP, chargeR []string
		fin              finishBatch
		toRun            []*job
		deniedTools      []string
		deniedSubmitted  []time.Time
	)
	for _, j := range jobs {
		g := e.authorize(j, budgets)
		j.decision = g.decision
		sa := ledger.StreamAppend{Stream: j.stream(), Expected: j.version}
		sa.Events = append(sa.Events, e.decisionEvent(j, g))
		j.next()
		switch g.verdict {
		case verdictDeny:
			res := failure(g.errorKind, g.message)
			a, err := e.sign(attestationInput{requestID: j.id, attempt: j.attempt, tool: j.tool, principal: j.principal,
				runID: j.runID, inputDigest: j.inputDigest, executor: "policy", decision: "deny", reason: g.decision.ReasonCode,
				started: now, finished: now, result: res})
			if err != nil {
				return 0, err
			}
			sa.Events = append(sa.Events, a.event)
			j.next()
			fin.add(j.id, "denied", res, "", a.digest)
			deniedTools, deniedSubmitted = append(deniedTools, j.tool), append(deniedSubmitted, j.submittedAt)
		case verdictAwaitApproval:
			sa.Events = append(sa.Events, ledger.NewEvent{Type: "approval.requested", Payload: map[string]any{
				"request_id": j.id, "tool": j.tool, "input_digest": "sha256:" + hex.EncodeToString(j.inputDigest),
				"expires_in_ms": e.cfg.ApprovalTimeout.Milliseconds(), "reason": "tool is marked sensitive",
			}, Metadata: e.meta(j)})
			awaitIDs, awaitVers = append(awaitIDs, j.id), append(awaitVers, j.next())
		case verdictRun:
			if g.charge {
				b := budgets[runKey{j.principal, j.runID}]
				sa.Events = append(sa.Events, ledger.NewEvent{Type: "budget.consumed", Payload: map[string]any{
					"request_id": j.id, "run_id": j.runID, "principal": j.principal, "used": b.used, "max_calls": b.max,
				}, Metadata: e.meta(j)})
				j.next()
				chargeP, chargeR = append(chargeP, j.principal), append(chargeR, j.runID)
			}
			sa.Events = append(sa.Events, ledger.NewEvent{Type: "execution.started", Payload: map[string]any{
				"request_id": j.id, "attempt": j.attempt, "executor": j.impl.Executor(), "tier": j.impl.Tier(),
				"timeout_ms": e.cfg.ToolTimeout.Milliseconds(),
			}, Metadata: e.meta(j)})
			startIDs, startVers, startCharge = append(startIDs, j.id), append(startVers, j.next()), append(startCharge, g.charge)
			toRun = append(toRun, j)
		}
		batch = append(batch, sa)
	}
	if _, err := e.store.AppendBatch(ctx, tx, batch); err != nil {
		return 0, err
	}
	if len(chargeP) > 0 {
		if _, err := tx.Exec(ctx, queryChargeBudgets, chargeP, chargeR); err != nil {
			return 0, fmt.Errorf("charge budgets: %w", err)
		}
	}
	if len(startIDs) > 0 {
		if _, err := tx.Exec(ctx, queryStartJobs, startIDs, startVers, startCharge); err != nil {
			return 0, fmt.Errorf("start: %w", err)
		}
	}
	if len(awaitIDs) > 0 {
		if _, err := tx.Exec(ctx, queryAwaitApproval, awaitIDs, awaitVers, e.cfg.ApprovalTimeout.String()); err != nil {
			return 0, fmt.Errorf("await approval: %w", err)
		}
	}
	if err := fin.exec(ctx, tx); err != nil {
		return 0, err
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
	for i := range fin.ids {
		e.metrics.finish(e, deniedTools[i], "denied", *fin.kinds[i], deniedSubmitted[i])
	}
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
		if err := rows.Scan(&j.id, &j.claimID, &j.attempt, &j.version, &j.principal, &j.tool, &j.runID, &input, &reqCtx,
			&j.inputDigest, &j.approved, &j.wasCharged, &j.submittedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim: %w", err)
		}
		j.input = json.RawMessage(input)
		if err := json.Unmarshal([]byte(reqCtx), &j.context); err != nil {
			e.logger.Warn("request context unreadable", slog.String("request_id", j.id.String()), slog.Any("error", err))
		}
		j.impl = e.tools[j.tool]
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return jobs, nil
}

func (e *Executor) meta(j *job) ledger.Metadata {
	return ledger.Metadata{Actor: e.cfg.Label, CorrelationID: j.id.String()}
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
		"sensitive":            e.sensitive[j.tool],
		"approved":             j.approved,
	}
	if g.verdict == verdictDeny {
		p["error_kind"] = g.errorKind
		p["message"] = g.message
	}
	return ledger.NewEvent{Type: "policy.decided", Payload: p, Metadata: e.meta(j)}
}

// finishBatch collects requests that end in one transaction.
type finishBatch struct {
	ids                                          []uuid.UUID
	states, kinds, msgs, outputs, tiers, digests []*string
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (f *finishBatch) add(id uuid.UUID, state string, res Result, tier, digest string) {
	f.ids = append(f.ids, id)
	f.states = append(f.states, &state)
	f.kinds = append(f.kinds, strp(res.ErrorKind))
	f.msgs = append(f.msgs, strp(res.Error))
	var out *string
	if len(res.Output) > 0 {
		s := string(res.Output)
		out = &s
	}
	f.outputs = append(f.outputs, out)
	f.tiers = append(f.tiers, strp(tier))
	f.digests = append(f.digests, strp(digest))
}

func (f *finishBatch) exec(ctx context.Context, tx pgx.Tx) error {
	if len(f.ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, queryFinish, f.ids, f.states, f.kinds, f.msgs, f.outputs, f.tiers, f.digests); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	return nil
}
