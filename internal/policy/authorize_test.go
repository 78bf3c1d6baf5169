package policy

import (
	"slices"
	"strings"
	"testing"

	cedar "github.com/cedar-policy/cedar-go"
)

type authorizeCase struct {
	name        string
	req         Request
	allowed     bool
	reason      string
	action      string
	determining []string
	errPrefixes []string // one per expected error, in order
}

// testdataCases run against every file in testdata/policies.
var testdataCases = []authorizeCase{
	{name: "allow", req: Request{Principal: "alice", Tool: "sleep"},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"allow-alice-echo-sleep"}},
	{name: "allow lists every matching permit, sorted", req: Request{Principal: "alice", Tool: "echo"},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"allow-alice-echo-sleep", "baseline-permit-echo"}},
	{name: "explicit forbid beats permit", req: Request{Principal: "bob", Tool: "echo"},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"forbid-bob-echo"}},
	{name: "baseline deny", req: Request{Principal: "carol", Tool: "sleep"},
		reason: ReasonBaselineDeny, action: ActionToolExecute, determining: []string{}},
	{name: "evaluation error denies despite matching permit", req: Request{Principal: "mallory", Tool: "echo"},
		reason: ReasonEvaluationError, action: ActionToolExecute,
		determining: []string{"broken-forbid-missing-attr", "broken-permit-missing-context"},
		errPrefixes: []string{"policy broken-forbid-missing-attr: ", "policy broken-permit-missing-context: "}},
	{name: "empty principal is an evaluation error", req: Request{Tool: "echo"},
		reason: ReasonEvaluationError, action: ActionToolExecute, determining: []string{}, errPrefixes: []string{"request: empty principal"}},
	{name: "empty tool is an evaluation error", req: Request{Principal: "alice"},
		reason: ReasonEvaluationError, action: ActionToolExecute, determining: []string{}, errPrefixes: []string{"request: empty tool"}},

	// ToolGroup membership (process.cedar).
	{name: "tool group member", req: Request{Principal: "ops", Tool: "process.run"},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"process.cedar:0"}},
	{name: "group is the prefix before the first dot", req: Request{Principal: "ops", Tool: "process.run.detached"},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"process.cedar:0"}},
	{name: "tool without dot is in no group", req: Request{Principal: "ops", Tool: "process"},
		reason: ReasonBaselineDeny, action: ActionToolExecute, determining: []string{}},
	{name: "similar prefix is another group", req: Request{Principal: "ops", Tool: "processx.run"},
		reason: ReasonBaselineDeny, action: ActionToolExecute, determining: []string{}},

	// Context attributes.
	{name: "capabilities: unless network", req: Request{Principal: "ops", Tool: "process.run", Device: "laptop-1", DeviceBound: true, Capabilities: []string{"process_exec", "network"}},
		reason: ReasonBaselineDeny, action: ActionToolExecute, determining: []string{}},
	{name: "capabilities without network", req: Request{Principal: "ops", Tool: "process.run", Capabilities: []string{"process_exec"}},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"process.cedar:0"}},
	{name: "run_id", req: Request{Principal: "ops", Tool: "process.run", RunID: "frozen"},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"process.cedar:1"}},
	{name: "sensitive off cli", req: Request{Principal: "alice", Tool: "sleep", Sensitive: true, Channel: "slack"},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"baseline-forbid-sensitive-off-cli"}},
	{name: "sensitive unknown channel", req: Request{Principal: "alice", Tool: "sleep", Sensitive: true},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"baseline-forbid-sensitive-off-cli"}},
	{name: "sensitive on cli", req: Request{Principal: "alice", Tool: "sleep", Sensitive: true, Channel: "cli", ChannelBound: true},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"allow-alice-echo-sleep"}},
	// A caller may claim any channel or device: only bound values count.
	{name: "sensitive on a claimed cli", req: Request{Principal: "alice", Tool: "sleep", Sensitive: true, Channel: "cli"},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"baseline-forbid-sensitive-off-cli"}},
	{name: "network from other device", req: Request{Principal: "carol", Tool: "echo", Device: "phone", DeviceBound: true, Capabilities: []string{"network"}},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"baseline-forbid-network-off-device"}},
	{name: "network from registered device", req: Request{Principal: "carol", Tool: "echo", Device: "laptop-1", DeviceBound: true, Capabilities: []string{"network"}},
		allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"baseline-permit-echo"}},
	{name: "network from a claimed registered device", req: Request{Principal: "carol", Tool: "echo", Device: "laptop-1", Capabilities: []string{"network"}},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"baseline-forbid-network-off-device"}},

	// Skills need tool.execute and skill.execute.
	{name: "skill: both checks allow", req: Request{Principal: "alice", Tool: "acme.hello", Skill: "acme"},
		allowed: true, reason: ReasonAllow, action: ActionSkillExecute, determining: []string{"permit-alice-acme-skill", "permit-alice-acme-tools"}},
	{name: "skill: skill check denies", req: Request{Principal: "alice", Tool: "acme.hello", Skill: "other"},
		reason: ReasonBaselineDeny, action: ActionSkillExecute, determining: []string{}},
	{name: "skill: tool check denies", req: Request{Principal: "bob", Tool: "acme.hello", Skill: "acme"},
		reason: ReasonBaselineDeny, action: ActionToolExecute, determining: []string{}},
	{name: "skill: forbid on tool check", req: Request{Principal: "alice", Tool: "acme.hello", Skill: "acme", Sensitive: true, Channel: "slack"},
		reason: ReasonDeny, action: ActionToolExecute, determining: []string{"baseline-forbid-sensitive-off-cli"}},
	{name: "skill: tool permit alone is not enough", req: Request{Principal: "carol", Tool: "echo", Skill: "acme"},
		reason: ReasonBaselineDeny, action: ActionSkillExecute, determining: []string{}},
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	e := loadTestdata(t)
	for _, tt := range testdataCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkDecision(t, e, tt, e.Authorize(tt.req))
		})
	}
}

// checkDecision reports mismatches with t.Errorf only, so it may be called
// from any goroutine.
func checkDecision(t testing.TB, e *Engine, tt authorizeCase, d Decision) {
	t.Helper()
	if d.Allowed != tt.allowed || d.ReasonCode != tt.reason || d.Action != tt.action {
		t.Errorf("%s: got allowed=%v reason=%s action=%s, want allowed=%v reason=%s action=%s (errors %q)",
			tt.name, d.Allowed, d.ReasonCode, d.Action, tt.allowed, tt.reason, tt.action, d.Errors)
	}
	if d.DeterminingPolicies == nil || !slices.Equal(d.DeterminingPolicies, tt.determining) {
		t.Errorf("%s: DeterminingPolicies = %#v, want %#v", tt.name, d.DeterminingPolicies, tt.determining)
	}
	if len(d.Errors) != len(tt.errPrefixes) {
		t.Errorf("%s: Errors = %q, want %d errors", tt.name, d.Errors, len(tt.errPrefixes))
		return
	}
	for i, p := range tt.errPrefixes {
		if !strings.HasPrefix(d.Errors[i], p) {
			t.Errorf("%s: Errors[%d] = %q, want prefix %q", tt.name, i, d.Errors[i], p)
		}
	}
	if d.PolicyDigest != e.Digest() {
		t.Errorf("%s: PolicyDigest = %s, want %s", tt.name, d.PolicyDigest, e.Digest())
	}
}

// TestActionScopes checks the per-action pre-selection of policies against
// every kind of action scope.
func TestActionScopes(t *testing.T) {
	t.Parallel()
	e := mustSources(t, "scopes.cedar", `
		@id("any")        permit(principal == Principal::"u", action, resource);
		@id("tool-eq")    permit(principal == Principal::"u", action == Action::"tool.execute", resource);
		@id("both-set")   permit(principal == Principal::"u", action in [Action::"tool.execute", Action::"skill.execute"], resource);
		@id("skill-in")   permit(principal == Principal::"u", action in Action::"skill.execute", resource);
		@id("other")      permit(principal == Principal::"u", action == Action::"other", resource);
		@id("other-in")   permit(principal == Principal::"u", action in Action::"other", resource);
		@id("other-set")  permit(principal == Principal::"u", action in [Action::"other"], resource);
		@id("other-err")  permit(principal, action == Action::"other", resource) when { principal.nope };
	`)
	tests := []authorizeCase{
		{name: "tool only", req: Request{Principal: "u", Tool: "t"},
			allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: []string{"any", "both-set", "tool-eq"}},
		{name: "skill is the union of both checks", req: Request{Principal: "u", Tool: "t", Skill: "s"},
			allowed: true, reason: ReasonAllow, action: ActionSkillExecute, determining: []string{"any", "both-set", "skill-in", "tool-eq"}},
	}
	for _, tt := range tests {
		checkDecision(t, e, tt, e.Authorize(tt.req))
	}
	for action, list := range e.byAction {
		for _, p := range list {
			if strings.HasPrefix(string(p.id), "other") {
				t.Errorf("policy %s selected for %s", p.id, action)
			}
		}
	}
}

// TestPreselectionMatchesCedar checks that evaluating only the policies
// selected for an action gives exactly what plain Cedar gives over the
// whole set.
func TestPreselectionMatchesCedar(t *testing.T) {
	t.Parallel()
	e := loadTestdata(t)
	var full policyList
	for _, src := range e.Sources() {
		list, err := cedar.NewPolicyListFromBytes(src.Name, src.Text)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range list {
			id, err := policyID(src.Name, i, p)
			if err != nil {
				t.Fatal(err)
			}
			full = append(full, namedPolicy{id: id, policy: p})
		}
	}
	if len(e.byAction[ActionSkillExecute]) >= len(full) {
		t.Fatalf("skill.execute pre-selection kept %d of %d policies", len(e.byAction[ActionSkillExecute]), len(full))
	}
	for _, tt := range testdataCases {
		for _, action := range []string{ActionToolExecute, ActionSkillExecute} {
			req := cedar.Request{
				Principal: tt.req.principalUID(),
				Action:    cedar.NewEntityUID(actionType, cedar.String(action)),
				Resource:  tt.req.toolUID(),
				Context:   tt.req.context(),
			}
			gotOK, gotDiag := cedar.Authorize(e.byAction[action], tt.req.entities(), req)
			wantOK, wantDiag := cedar.Authorize(full, tt.req.entities(), req)
			got, want := decide(action, "", gotOK, gotDiag), decide(action, "", wantOK, wantDiag)
			if got.Allowed != want.Allowed || got.ReasonCode != want.ReasonCode ||
				!slices.Equal(got.DeterminingPolicies, want.DeterminingPolicies) || !slices.Equal(got.Errors, want.Errors) {
				t.Errorf("%s/%s: pre-selected %+v, full set %+v", tt.name, action, got, want)
			}
		}
	}
}
