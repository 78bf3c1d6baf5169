package executor

import (
	"context"
	"fmt"

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
	verdict    verdict
	errorKind  ledger.ErrorKind
	message    string
	charge     bool // consume one call of the run's budget
	decision   policy.Decision
	stage      string
	toolReason string // a tool's Prepare refused: its Refusal.Reason
}

// runKey identifies a run's budget.
type runKey struct{ principal, runID string }

type budget struct {
	max, used int
	ended     bool // ledger.end_run was called
	charged   map[string]bool
}

// authorize runs Palyra's gate for one job, in order: input caps, run and
// budget, skill status, support, policy, the tool's own checks (its
// Prepare), approval; only then is the budget charged. Every stage's
// decision is recorded.
func (c *claimer) authorize(ctx context.Context, pol *policy.Engine, j *job, budgets map[runKey]*budget) gate {
	deny := func(stage string, kind ledger.ErrorKind, reason, msg string) gate {
		return gate{verdict: verdictDeny, errorKind: kind, message: msg, stage: stage,
			decision: policy.Decision{Allowed: false, ReasonCode: reason, PolicyDigest: pol.Digest(), Action: "tool.execute"}}
	}
	if limit := inputCap(j.tool, j.impl); len(j.input) > limit {
		return deny("input", ledger.KindInvalidInput, "quota/tool_input_too_large",
			fmt.Sprintf("quota/tool_input_too_large: tool=%s input_bytes=%d limit_bytes=%d", j.tool, len(j.input), limit))
	}
	var b *budget
	if j.runID != "" {
		b = budgets[runKey{j.principal, j.runID}]
		if b != nil && b.ended && !j.charged() {
			return deny("run", ledger.KindPolicyDenied, "run.ended",
				fmt.Sprintf("run %s has ended (ledger.end_run); it takes no more calls", j.runID))
		}
		if b != nil && b.used >= b.max && !j.charged() {
			return deny("budget", ledger.KindBudgetExhausted, "budget.exhausted",
				fmt.Sprintf("budget exhausted for run %s: %d of %d calls used", j.runID, b.used, b.max))
		}
	}
	// A skill that may not run is denied before Cedar, with the reason
	// the skill check gave (status, digest, signature, trust, audit).
	if j.skill != nil && j.skill.Refusal != "" {
		return deny("skill", ledger.KindSkillNotActive, "skill.not_active", j.skill.Refusal)
	}
	// A tool this executor does not run is unsupported whatever the
	// policy says: checked before Cedar, so that the denial names the
	// real cause rather than the absence of a permit.
	if j.impl == nil {
		msg := fmt.Sprintf("tool %q is not supported by this executor", j.tool)
		if c.cfg.UnsupportedHint != nil {
			if hint := c.cfg.UnsupportedHint(j.tool); hint != "" {
				msg += ": " + hint
			}
		}
		return deny("support", ledger.KindPolicyDenied, "tool.unsupported", msg)
	}
	req := j.policyRequest()
	req.Sensitive = c.tools.sensitiveJob(j)
	if j.skill != nil {
		req.Skill, req.SkillVersion, req.SkillPublisher = j.skill.Skill.ID, j.skill.Skill.Version, j.skill.Skill.Publisher
		req.SkillRequiresApproval, req.Capabilities = j.skill.RequiresApproval, j.skill.Capabilities
	}
	d := pol.Authorize(req)
	if !d.Allowed {
		g := deny("policy", ledger.KindPolicyDenied, d.ReasonCode, "denied by policy: "+d.Plain(req))
		g.decision = d
		return g
	}
	prepared, err := prepare(ctx, j)
	if err != nil {
		r := refusalOf(err)
		g := deny("input", r.Kind, "tool."+string(r.Kind), storableText(r.Message))
		g.decision.DeterminingPolicies, g.toolReason = d.DeterminingPolicies, r.Reason
		return g
	}
	j.prepared = prepared
	if c.tools.sensitiveJob(j) && !j.approved {
		return gate{verdict: verdictAwaitApproval, decision: d, stage: "approval"}
	}
	charge := b != nil && !j.charged()
	if charge {
		b.used++
	}
	return gate{verdict: verdictRun, decision: d, charge: charge, stage: "allow"}
}

// prepare runs the job's tool's Prepare, turning a panic into a refusal
// (runtime_failure) rather than the end of the claimer, and a refusal
// whose kind is not the contract's into a runtime_failure, which
// ledger.executor_record would otherwise refuse, failing the whole claim.
func prepare(ctx context.Context, j *job) (prepared any, err error) {
	defer func() {
		if p := recover(); p != nil {
			prepared, err = nil, &Refusal{Kind: ledger.KindRuntimeFailure, Message: j.tool + ": internal error while checking the input"}
		}
	}()
	prepared, err = j.impl.Prepare(ctx, j.call())
	if err == nil {
		return prepared, nil
	}
	if r := refusalOf(err); !r.Kind.Valid() {
		return nil, &Refusal{Kind: ledger.KindRuntimeFailure, Message: fmt.Sprintf("%s: refused the call with an unknown error kind %q", j.tool, r.Kind)}
	}
	return nil, err
}
