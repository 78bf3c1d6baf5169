package policy

import (
	cedar "github.com/cedar-policy/cedar-go"
)

// Authorize decides whether r may run. It never returns an error: anything
// that prevents a clean evaluation (a failing policy, or a request with an
// empty Principal or Tool) denies with [ReasonEvaluationError].
//
// A request with a Skill must pass tool.execute on Tool::"<tool>" and then
// skill.execute on Skill::"<skill>"; the first check that denies decides
// and is named in Decision.Action. When both allow, DeterminingPolicies is
// the union of the permits of both checks.
func (e *Engine) Authorize(r Request) Decision {
	if d, bad := e.invalid(r); bad {
		return d
	}
	entities := r.entities()
	ctx := r.context()
	tool := e.check(ActionToolExecute, r.toolUID(), r, entities, ctx)
	if !tool.Allowed || r.Skill == "" {
		return tool
	}
	skill := e.check(ActionSkillExecute, r.skillUID(), r, entities, ctx)
	if skill.Allowed {
		skill.DeterminingPolicies = sortedUnique(append(tool.DeterminingPolicies, skill.DeterminingPolicies...))
	}
	return skill
}

// check runs one Cedar authorization for action on resource.
func (e *Engine) check(action string, resource cedar.EntityUID, r Request, entities cedar.EntityGetter, ctx cedar.Record) Decision {
	ok, diag := cedar.Authorize(e.byAction[action], entities, cedar.Request{
		Principal: r.principalUID(),
		Action:    cedar.NewEntityUID(actionType, cedar.String(action)),
		Resource:  resource,
		Context:   ctx,
	})
	return decide(action, e.digest, ok, diag)
}

// invalid denies requests that cannot be evaluated meaningfully: an empty
// principal or tool would otherwise match only wildcard policies.
func (e *Engine) invalid(r Request) (Decision, bool) {
	var msg string
	switch {
	case r.Principal == "":
		msg = "request: empty principal"
	case r.Tool == "":
		msg = "request: empty tool"
	default:
		return Decision{}, false
	}
	return Decision{
		ReasonCode:          ReasonEvaluationError,
		DeterminingPolicies: []string{},
		Errors:              []string{msg},
		PolicyDigest:        e.digest,
		Action:              ActionToolExecute,
	}, true
}
