package policy

import (
	cedar "github.com/cedar-policy/cedar-go"
)

// PolicyVerdict is what one policy made of a request: whether it applies
// (its scope and conditions hold: a permit that applies permits, a forbid
// that applies forbids), or the error that evaluating it raised.
type PolicyVerdict struct {
	ID      string `json:"id"`
	Effect  string `json:"effect"` // permit or forbid
	Action  string `json:"action"` // the check it was evaluated in
	File    string `json:"file"`
	Line    int    `json:"line"`
	Applies bool   `json:"applies"`
	Error   string `json:"error,omitempty"`
	Text    string `json:"text"`
}

// Explain evaluates each policy that can concern r on its own, in load
// order: those of the tool.execute check and, for a skill, those of the
// skill.execute check. Together with [Engine.Authorize]'s Decision it
// says which policies matched and why the others did not.
func (e *Engine) Explain(r Request) []PolicyVerdict {
	entities := r.entities()
	ctx := r.context()
	out := e.explainAction(ActionToolExecute, r.toolUID(), r, entities, ctx)
	if r.Skill != "" {
		out = append(out, e.explainAction(ActionSkillExecute, r.skillUID(), r, entities, ctx)...)
	}
	return out
}

func (e *Engine) explainAction(action string, resource cedar.EntityUID, r Request, entities cedar.EntityGetter, ctx cedar.Record) []PolicyVerdict {
	var out []PolicyVerdict
	req := cedar.Request{Principal: r.principalUID(), Action: cedar.NewEntityUID(actionType, cedar.String(action)),
		Resource: resource, Context: ctx}
	for _, p := range e.byAction[action] {
		v := PolicyVerdict{ID: string(p.id), Effect: "permit", Action: action, File: p.policy.Position().Filename,
			Line: p.policy.Position().Line, Text: string(p.policy.MarshalCedar())}
		if p.policy.Effect() == cedar.Forbid {
			v.Effect = "forbid"
		}
		_, diag := cedar.Authorize(policyList{p}, entities, req)
		switch {
		case len(diag.Errors) > 0:
			v.Error = diag.Errors[0].Message
		case len(diag.Reasons) > 0:
			v.Applies = true
		}
		out = append(out, v)
	}
	return out
}
