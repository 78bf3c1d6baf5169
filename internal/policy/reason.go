package policy

import (
	"fmt"
	"strings"
)

// Plain says in words why d decided as it did for r, for people reading a
// request's error: `no policy permits principal "billing" to run tool
// "echo"`. The machine-readable reason code and policy ids stay in the
// Decision; Plain names them at its end so that both can be read from the
// one message.
func (d Decision) Plain(r Request) string {
	what := fmt.Sprintf("principal %q to run tool %q", r.Principal, r.Tool)
	if d.Action == ActionSkillExecute {
		what = fmt.Sprintf("principal %q to run skill %q (tool %q)", r.Principal, r.Skill, r.Tool)
	}
	var s string
	switch d.ReasonCode {
	case ReasonAllow:
		s = fmt.Sprintf("%s permits %s", plural("policy", d.DeterminingPolicies), what)
	case ReasonDeny:
		s = fmt.Sprintf("%s forbids %s", plural("policy", d.DeterminingPolicies), what)
	case ReasonBaselineDeny:
		s = "no policy permits " + what
	case ReasonEvaluationError:
		s = fmt.Sprintf("could not decide whether to permit %s: %s", what, strings.Join(d.Errors, "; "))
	default:
		s = "denied " + what
	}
	return s + " (" + d.ReasonCode + ")"
}

// plural is `policy "a"` or `policies "a", "b"`.
func plural(noun string, ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	if len(ids) == 1 {
		return noun + " " + q[0]
	}
	return "policies " + strings.Join(q, ", ")
}
