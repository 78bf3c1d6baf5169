package policy

import (
	"slices"

	cedar "github.com/cedar-policy/cedar-go"
)

// Actions evaluated by the engine.
const (
	ActionToolExecute  = "tool.execute"
	ActionSkillExecute = "skill.execute"
)

// Reason codes (Palyra's, machine-readable).
const (
	// ReasonAllow: at least one permit matched, no forbid matched, no error.
	ReasonAllow = "policy.allow"
	// ReasonDeny: an explicit forbid matched; DeterminingPolicies are the
	// matching forbids.
	ReasonDeny = "policy.deny"
	// ReasonBaselineDeny: no permit matched (Cedar's default deny).
	ReasonBaselineDeny = "policy.baseline_deny"
	// ReasonEvaluationError: at least one policy failed to evaluate; the
	// request is denied even if a permit matched. DeterminingPolicies are
	// the failing policies and Errors lists every error.
	ReasonEvaluationError = "policy.deny.evaluation_error"
)

// Decision is the outcome of [Engine.Authorize], recorded in the
// policy.decided event.
type Decision struct {
	Allowed             bool     `json:"allowed"`
	ReasonCode          string   `json:"reason_code"`
	DeterminingPolicies []string `json:"determining_policies"` // sorted; never nil
	Errors              []string `json:"errors,omitempty"`     // "policy <id>: <message>" in load order, or "request: <problem>"
	PolicyDigest        string   `json:"policy_digest"`
	Action              string   `json:"action"` // the check that decided
}

// decide turns one Cedar result into a Decision, failing closed on errors.
func decide(action, digest string, ok cedar.Decision, diag cedar.Diagnostic) Decision {
	d := Decision{PolicyDigest: digest, Action: action}
	if len(diag.Errors) > 0 {
		d.ReasonCode = ReasonEvaluationError
		ids := make([]string, 0, len(diag.Errors))
		for _, e := range diag.Errors {
			ids = append(ids, string(e.PolicyID))
			d.Errors = append(d.Errors, "policy "+string(e.PolicyID)+": "+e.Message)
		}
		d.DeterminingPolicies = sortedUnique(ids)
		return d
	}
	ids := make([]string, 0, len(diag.Reasons))
	for _, r := range diag.Reasons {
		ids = append(ids, string(r.PolicyID))
	}
	d.DeterminingPolicies = sortedUnique(ids)
	switch {
	case ok == cedar.Allow:
		d.Allowed, d.ReasonCode = true, ReasonAllow
	case len(diag.Reasons) > 0:
		d.ReasonCode = ReasonDeny
	default:
		d.ReasonCode = ReasonBaselineDeny
	}
	return d
}

func sortedUnique(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}
