package executor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/execledger/execledger/internal/retry"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/execledger/execledger/ledger"
)

// jobRunner is what the claimer needs of the runner: room, and a way to
// start what it authorized.
type jobRunner interface {
	// free is how many more jobs may run now.
	free() int
	// start runs an authorized job; the caller made sure one is free.
	start(j *job)
	// runInline runs an authorized job of an InlineTool at once, on the
	// caller's goroutine.
	runInline(j *job) Result
}

// claimer takes pending requests in batches and authorizes each in the
// claim's own transaction: the claim, every decision, the budget each
// allowed call consumes and the denials' outcomes commit together or not
// at all. Allowed calls go to the runner once that has committed. It claims
// while the runner has room and there is work, and otherwise waits for a
// NOTIFY (wake), a freed slot or the poll interval.
type claimer struct {
	cfg     Config
	rec     *recorder
	policy  *policyRef
	tools   *toolSet
	runner  jobRunner
	metrics *Metrics
	tracing tracing
	logger  *slog.Logger
	hooks   *testHooks
	wake    chan struct{} // a NOTIFY or a free slot: try to claim
	// woken is set by a NOTIFY on ledger_request_pending: the submit that
	// sent it took this executor's registration (ledger.wake_waiters), so
	// the claimer registers again when it next finds the queue empty.
	woken atomic.Bool
}

// notified is the listener's: a submit woke the waiters, taking their
// registrations, or the listener reconnected and may have missed that.
func (c *claimer) notified() {
	c.woken.Store(true)
	c.poke()
}

// poke asks the claimer to try a claim now.
func (c *claimer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run claims until ctx ends.
func (c *claimer) run(ctx context.Context) {
	waiting := false // registered in ledger.queue_waiters
	poll := time.NewTimer(0)
	defer poll.Stop()
	for ctx.Err() == nil {
		if c.woken.Swap(false) {
			waiting = false // the registration was taken: make it again when idle
		}
		if free := c.runner.free(); free > 0 {
			n, err := c.claim(ctx, min(free, c.cfg.ClaimBatch))
			if errors.Is(err, ErrSkillsNotReady) {
				// The claim rolled back: build its skills outside any
				// transaction, then claim again.
				if err := c.cfg.Skills.Prepare(ctx); err != nil && ctx.Err() == nil {
					c.logger.Error("prepare skills", slog.Any("error", err))
					retry.Sleep(ctx, 200*time.Millisecond)
				}
				continue
			}
			if err != nil && ctx.Err() == nil {
				c.logger.Error("claim", slog.Any("error", err))
				retry.Sleep(ctx, 200*time.Millisecond)
				continue
			}
			if n > 0 {
				if waiting {
					waiting = !c.unregisterWaiter(ctx)
				}
				continue
			}
			if !waiting {
				if c.registerWaiter(ctx) {
					waiting = true
					continue // claim once more now that submitters will notify
				}
			}
		}
		poll.Reset(c.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-c.wake:
		case <-poll.C:
		}
	}
}

// registerWaiter asks submitters to NOTIFY, then waits until every
// transaction that began before the registration was visible has ended:
// a submit that checked for waiters before then has committed, so the next
// claim sees its request. It reports whether the registration holds.
func (c *claimer) registerWaiter(ctx context.Context) bool {
	pool := c.rec.pool
	if _, err := pool.Exec(ctx, queryRegisterWaiter, c.cfg.Label); err != nil {
		c.logger.Warn("register waiter", slog.Any("error", err))
		return false
	}
	var horizon string
	if err := pool.QueryRow(ctx, queryHorizon).Scan(&horizon); err != nil {
		return true
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var passed bool
		if err := pool.QueryRow(ctx, queryHorizonPassed, horizon).Scan(&passed); err != nil || passed {
			return true
		}
		retry.Sleep(ctx, time.Millisecond)
	}
	return true
}

func (c *claimer) unregisterWaiter(ctx context.Context) bool {
	_, err := c.rec.pool.Exec(ctx, queryUnregisterWaiter, c.cfg.Label)
	return err == nil
}

// claim takes up to n requests and authorizes them in one transaction,
// and hands those that may run to the runner. It returns how many requests
// it claimed.
//
// What a claim commits must reach the runner, which holds it until its
// outcome is written; the stop (stop ending) must therefore never come
// between the two. Cut off during COMMIT, the transaction commits on the
// server while the client sees an error: its claims would be held by an
// executor that never runs, never completes and never heartbeats them,
// until their leases expire. So the claim runs in a context of its own,
// which the stop does not end (outlive), and what it commits runs under
// the shutdown grace like every call already running: the claimer heeds
// the stop only between claims.
func (c *claimer) claim(stop context.Context, n int) (int, error) {
	ctx, cancel := outlive(stop, c.cfg.Lease)
	defer cancel()
	began := time.Now()
	var (
		claimed    []*job
		toRun      []*job
		denied     []*job
		inlined    []*job
		batchSpan  trace.Span
		claimSpans []trace.Span
	)
	_, err := settle(ctx, c.rec, queryClaim, []any{c.cfg.Label, n, c.cfg.Lease.String()}, c.scanJob,
		func(ctx context.Context, tx pgx.Tx, jobs []*job, w *writes) error {
			claimed = jobs
			c.hooks.reach(hookClaimLocked)
			// The claim query itself is not traced: most polls claim
			// nothing, and a trace per empty poll would bury the requests'.
			ctx, batchSpan, claimSpans = c.tracing.claimed(ctx, jobs, began)
			var err error
			if toRun, denied, inlined, err = c.decide(ctx, tx, jobs, w); err == nil {
				c.hooks.reach(hookClaimDecided)
			}
			return err
		})
	if err != nil {
		endClaim(claimed, batchSpan, claimSpans, err, nil)
		return 0, fmt.Errorf("claim: %w", err) // ErrSkillsNotReady stays visible to errors.Is
	}
	c.metrics.claimed(len(claimed))
	for _, j := range claimed {
		decision := "allow"
		if !j.decision.Allowed {
			decision = "deny"
		}
		c.metrics.decide(decision, j.decision.ReasonCode)
	}
	for _, j := range denied {
		c.metrics.finish(c.tools.label(j.tool), ledger.StateDenied, j.deniedKind, j.submittedAt)
	}
	if len(inlined) > 0 {
		c.metrics.completed(len(inlined))
	}
	for _, j := range inlined {
		c.metrics.finish(c.tools.label(j.tool), j.result.State(), j.result.ErrorKind, j.submittedAt)
		outcomeAttributes(j, j.result)
	}
	endClaim(claimed, batchSpan, claimSpans, nil, toRun)
	if len(claimed) > 0 {
		c.hooks.reach(hookClaimCommitted)
	}
	for _, j := range toRun {
		c.runner.start(j)
	}
	return len(claimed), nil
}

// outlive returns a context that ctx's end does not cancel, for work a
// stop must not interrupt, except to abandon it d after the stop. A claim
// still running one lease after the stop has lost whatever it claimed
// anyway: the leases it took have expired, and rescue settles them.
func outlive(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopWatching := context.AfterFunc(ctx, func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-out.Done():
		}
	})
	return out, func() {
		stopWatching()
		cancel()
	}
}

// scanJob reads one claimed request.
func (c *claimer) scanJob(row pgx.CollectableRow) (*job, error) {
	j := &job{}
	var input, reqCtx string
	var bound []string
	if err := row.Scan(&j.id, &j.claimID, &j.attempt, &j.version, &j.principal, &j.tool, &j.runID, &input, &reqCtx,
		&bound, &j.inputDigest, &j.approved, &j.wasCharged, &j.submittedAt, &j.leaseExpiresAt); err != nil {
		return nil, err
	}
	j.input = json.RawMessage(input)
	if err := json.Unmarshal([]byte(reqCtx), &j.context); err != nil {
		c.logger.Warn("request context unreadable", slog.String("request_id", j.id.String()), slog.Any("error", err))
	}
	j.channelBound, j.deviceBound = slices.Contains(bound, "channel"), slices.Contains(bound, "device")
	j.impl = c.tools.get(j.tool)
	return j, nil
}

// decide authorizes each claimed job and records the claim with its
// decision in one request.decided (the compact grammar, 021): a denial
// followed by its attestation, a wait for approval followed by
// approval.requested, or, for a call that runs, the budget it consumes and
// the start of its execution as members of the same event. It returns the
// jobs to run and those denied.
func (c *claimer) decide(ctx context.Context, tx pgx.Tx, jobs []*job, w *writes) (toRun, denied, inlined []*job, err error) {
	if err := c.resolveSkills(ctx, tx, jobs); err != nil {
		return nil, nil, nil, err
	}
	budgets, err := c.lockBudgets(ctx, tx, jobs)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	pol := c.policy.load() // one policy for the whole batch
	for _, j := range jobs {
		endAuthorize := c.tracing.authorize(j)
		g := c.authorize(ctx, pol, j, budgets)
		j.decision = g.decision
		sa := ledger.StreamAppend{Stream: j.stream(), Expected: j.version}
		decided := c.decidedPayload(j, g)
		sa.Events = append(sa.Events, ledger.NewEvent{Type: "request.decided", Payload: decided, Metadata: c.rec.meta(j.id, j.trace.sc)})
		j.next()
		switch g.verdict {
		case verdictDeny:
			res := failure(g.errorKind, g.message)
			a, err := c.rec.sign(ctx, attestationInput{requestID: j.id, attempt: j.attempt, tool: j.tool, principal: j.principal,
				runID: j.runID, inputDigest: j.inputDigest, executor: "policy", decision: "deny", reason: g.decision.ReasonCode,
				started: now, finished: now, result: res, skill: j.skillRef(), trace: j.trace.sc, policyDigest: g.decision.PolicyDigest})
			if err != nil {
				return nil, nil, nil, err
			}
			sa.Events = append(sa.Events, a.event)
			j.next()
			w.finish(j.id, j.claimID, ledger.StateDenied, res, "")
			j.deniedKind = res.ErrorKind
			denied = append(denied, j)
		case verdictAwaitApproval:
			sa.Events = append(sa.Events, ledger.NewEvent{Type: "approval.requested", Payload: map[string]any{
				"request_id": j.id, "tool": j.tool, "input_digest": "sha256:" + hex.EncodeToString(j.inputDigest),
				"expires_in_ms": c.cfg.ApprovalTimeout.Milliseconds(), "reason": approvalReason(j),
			}, Metadata: c.rec.meta(j.id, j.trace.sc)})
			j.next()
			w.transition(j.id, j.claimID, transAwaitApproval, false)
		case verdictRun:
			if g.charge {
				b := budgets[runKey{j.principal, j.runID}]
				decided["budget"] = map[string]any{"principal": j.principal, "run_id": j.runID, "used": b.used, "max_calls": b.max}
			}
			endAuthorize(g) // the start is the claim's
			decided["execution"] = map[string]any{
				"executor": j.impl.Executor(), "attempt": j.attempt, "tier": j.impl.Tier(),
				"timeout_ms": c.cfg.ToolTimeout.Milliseconds(),
			}
			if runsInline(j.impl) {
				// Run it here, and record its outcome in this transaction.
				if err := c.inline(ctx, tx, j, &sa, w, g.charge); err != nil {
					return nil, nil, nil, err
				}
				inlined = append(inlined, j)
				break
			}
			w.transition(j.id, j.claimID, transStart, g.charge)
			toRun = append(toRun, j)
		}
		endAuthorize(g)
		w.events(j.id, j.claimID, sa)
	}
	return toRun, denied, inlined, nil
}

// inline runs j, an InlineTool's call, and records its outcome after its
// request.decided in sa: execution.completed (or a cancellation's events),
// the tool's storage writes, and its state change (finish, charged to its
// run when charge).
func (c *claimer) inline(ctx context.Context, tx pgx.Tx, j *job, sa *ledger.StreamAppend, w *writes, charge bool) error {
	res := c.runner.runInline(j)
	events, others, err := c.rec.outcome(ctx, j, res, time.Now())
	if err != nil {
		return err
	}
	for range events {
		j.next()
	}
	sa.Events = append(sa.Events, events...)
	for _, o := range others {
		w.other(o)
	}
	if res.State() == ledger.StateSucceeded && len(res.StorageWrites) > 0 {
		var stored storageWrites
		stored.add(res.StorageWrites)
		if err := stored.exec(ctx, tx); err != nil {
			return err
		}
	}
	j.result = res
	w.finish(j.id, j.claimID, res.State(), res, j.impl.Tier())
	w.charges[w.index[j.id]] = charge
	return nil
}

// resolveSkills gives the jobs whose tool no registered tool serves
// their skill tool, if an installed skill serves it.
func (c *claimer) resolveSkills(ctx context.Context, tx pgx.Tx, jobs []*job) error {
	if c.cfg.Skills == nil {
		return nil
	}
	var tools []string
	for _, j := range jobs {
		if j.impl == nil {
			tools = append(tools, j.tool)
		}
	}
	if len(tools) == 0 {
		return nil
	}
	found, err := c.cfg.Skills.Resolve(ctx, tx, tools)
	if err != nil {
		return fmt.Errorf("skills: %w", err) // ErrSkillsNotReady stays visible to errors.Is
	}
	for _, j := range jobs {
		if st, ok := found[j.tool]; ok && j.impl == nil {
			j.skill = &st
			j.impl = st.Tool
			c.tools.served.Store(j.tool, struct{}{})
		}
	}
	return nil
}

// lockBudgets creates the missing budget rows of the jobs' runs and locks
// them all, in key order so that concurrent claimers cannot deadlock.
func (c *claimer) lockBudgets(ctx context.Context, tx pgx.Tx, jobs []*job) (map[runKey]*budget, error) {
	out := map[runKey]*budget{}
	var ids, claims []uuid.UUID
	for _, j := range jobs {
		if j.runID != "" {
			ids, claims = append(ids, j.id), append(claims, j.claimID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, queryLockBudgets, ids, claims, c.cfg.DefaultMaxCallsPerRun)
	if err != nil {
		return nil, fmt.Errorf("lock budgets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k runKey
		var b budget
		if err := rows.Scan(&k.principal, &k.runID, &b.max, &b.used, &b.ended); err != nil {
			return nil, err
		}
		out[k] = &b
	}
	return out, rows.Err()
}

// decidedPayload is the request.decided of one claimed job: the claim
// (request.claimed's members), the pipeline's decision, with the request's
// channel and device as policies see them (origin: claimed and bound)
// (policy.decided's), and the verdict: run, deny or await_approval. decide
// adds the budget and the execution when the call runs.
func (c *claimer) decidedPayload(j *job, g gate) map[string]any {
	errs := g.decision.Errors
	if errs == nil {
		errs = []string{}
	}
	pols := g.decision.DeterminingPolicies
	if pols == nil {
		pols = []string{}
	}
	decision, verdict := "allow", "run"
	switch g.verdict {
	case verdictDeny:
		decision, verdict = "deny", "deny"
	case verdictAwaitApproval:
		verdict = "await_approval"
	}
	p := map[string]any{
		"request_id":           j.id,
		"executor":             c.cfg.Label,
		"claim_id":             j.claimID,
		"attempt":              j.attempt,
		"lease_expires_at":     j.leaseExpiresAt.UTC(),
		"verdict":              verdict,
		"decision":             decision,
		"stage":                g.stage,
		"reason_code":          g.decision.ReasonCode,
		"action":               g.decision.Action,
		"determining_policies": pols,
		"errors":               errs,
		"policy_digest":        g.decision.PolicyDigest,
		"sensitive":            c.tools.sensitiveJob(j),
		"approved":             j.approved,
		"origin":               j.policyRequest().Origin(),
	}
	if g.verdict == verdictDeny {
		p["error_kind"] = g.errorKind
		p["message"] = g.message
	}
	if g.toolReason != "" {
		p["tool_reason"] = g.toolReason
	}
	if s := j.skillRef(); s != nil {
		p["skill"] = s
	}
	return p
}
