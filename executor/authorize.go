package executor

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
)

// Input caps in bytes, by tool (Palyra's table); any other tool: unknownCap.
const (
	capEcho       = 16 << 10
	capProcessRun = 128 << 10
	capSkill      = 448 << 10
	capUnknown    = 64 << 10
)

// inputCap is the largest input tool accepts.
func inputCap(tool string, impl Tool) int {
	switch {
	case tool == "echo":
		return capEcho
	case tool == "process.run":
		return capProcessRun
	case impl != nil && impl.Tier() == "A":
		return capSkill
	case impl != nil:
		return capUnknown
	}
	return capUnknown
}

// verdict is the authorization pipeline's outcome for one job.
type verdict int

const (
	verdictRun verdict = iota
	verdictDeny
	verdictAwaitApproval
)

// gate is one job's passage through the pipeline.
type gate struct {
	verdict   verdict
	errorKind string
	message   string
	charge    bool // consume one call of the run's budget
	decision  policy.Decision
	stage     string
}

// runKey identifies a run's budget.
type runKey struct{ principal, runID string }

type budget struct {
	max, used int
	ended     bool // ledger.end_run was called
	charged   map[string]bool
}

// lockBudgets creates the missing budget rows of the jobs' runs and locks
// them all, in key order so that concurrent claimers cannot deadlock.
func (e *Executor) lockBudgets(ctx context.Context, tx pgx.Tx, jobs []*job) (map[runKey]*budget, error) {
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
	rows, err := tx.Query(ctx, queryLockBudgets, ids, claims, e.cfg.DefaultMaxCallsPerRun)
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

// authorize runs Palyra's gate for one job, in order: input shape and caps,
// budget, support, policy, the tool's input check, approval. Every stage's decision is recorded.
func (e *Executor) authorize(j *job, budgets map[runKey]*budget) gate {
	deny := func(stage, kind, reason, msg string) gate {
		return gate{verdict: verdictDeny, errorKind: kind, message: msg, stage: stage,
			decision: policy.Decision{Allowed: false, ReasonCode: reason, PolicyDigest: e.policy.Digest(), Action: "tool.execute"}}
	}
	if limit := inputCap(j.tool, j.impl); len(j.input) > limit {
		return deny("input", string(ledger.KindInvalidInput), "quota/tool_input_too_large",
			fmt.Sprintf("quota/tool_input_too_large: tool=%s input_bytes=%d limit_bytes=%d", j.tool, len(j.input), limit))
	}
	var b *budget
	if j.runID != "" {
		b = budgets[runKey{j.principal, j.runID}]
		if b != nil && b.ended && !j.charged() {
			return deny("run", string(ledger.KindPolicyDenied), "run.ended",
				fmt.Sprintf("run %s has ended (ledger.end_run); it takes no more calls", j.runID))
		}
		if b != nil && b.used >= b.max && !j.charged() {
			return deny("budget", string(ledger.KindBudgetExhausted), "budget.exhausted",
				fmt.Sprintf("budget exhausted for run %s: %d of %d calls used", j.runID, b.used, b.max))
		}
	}
	// A skill that may not run is denied before Cedar, with the reason
	// the skill check gave (status, digest, signature, trust, audit).
	if j.skill != nil && j.skill.Refusal != "" {
		return deny("skill", string(ledger.KindSkillNotActive), "skill.not_active", j.skill.Refusal)
	}
	// A tool this executor does not run is unsupported whatever the
	// policy says: checked before Cedar, so that the denial names the
	// real cause rather than the absence of a permit.
	if j.impl == nil {
		return deny("support", string(ledger.KindPolicyDenied), "tool.unsupported", fmt.Sprintf("tool %q is not supported by this executor", j.tool))
	}
	req := policy.Request{
		Principal: j.principal, Tool: j.tool, Channel: j.context.Channel, Device: j.context.Device,
		ChannelBound: j.channelBound, DeviceBound: j.deviceBound, Session: j.context.Session, RunID: j.runID, Sensitive: e.sensitiveJob(j),
	}
	if j.skill != nil {
		req.Skill, req.SkillVersion, req.SkillPublisher = j.skill.Skill.ID, j.skill.Skill.Version, j.skill.Skill.Publisher
		req.SkillRequiresApproval, req.Capabilities = j.skill.RequiresApproval, j.skill.Capabilities
	}
	d := e.policy.Authorize(req)
	if !d.Allowed {
		g := deny("policy", string(ledger.KindPolicyDenied), d.ReasonCode, "denied by policy: "+d.ReasonCode)
		g.decision = d
		return g
	}
	if err := j.impl.Validate(j.input); err != nil {
		g := deny("input", string(ledger.KindInvalidInput), "tool.invalid_input", err.Error())
		g.decision.DeterminingPolicies = d.DeterminingPolicies
		return g
	}
	if e.sensitiveJob(j) && !j.approved {
		return gate{verdict: verdictAwaitApproval, decision: d, stage: "approval"}
	}
	charge := b != nil && !j.charged()
	if charge {
		b.used++
	}
	return gate{verdict: verdictRun, decision: d, charge: charge, stage: "allow"}
}
