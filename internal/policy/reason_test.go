package policy

import "testing"

func TestPlainSaysWhyInWords(t *testing.T) {
	t.Parallel()
	e := mustSources(t, "p.cedar", `@id("ops-echo")
permit (principal == Principal::"ops", action == Action::"tool.execute", resource == Tool::"echo");
@id("no-bob")
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource);
@id("bob-all")
permit (principal == Principal::"bob", action == Action::"tool.execute", resource);
@id("broken")
permit (principal == Principal::"eve", action == Action::"tool.execute", resource) when { context.device == "x" };
@id("skills")
permit (principal == Principal::"ops", action == Action::"tool.execute", resource) when { context.skill_id != "" };`)
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{Principal: "billing", Tool: "echo"}, `no policy permits principal "billing" to run tool "echo" (policy.baseline_deny)`},
		{Request{Principal: "ops", Tool: "echo"}, `policy "ops-echo" permits principal "ops" to run tool "echo" (policy.allow)`},
		{Request{Principal: "bob", Tool: "echo"}, `policy "no-bob" forbids principal "bob" to run tool "echo" (policy.deny)`},
		{Request{Principal: "eve", Tool: "echo"}, `could not decide whether to permit principal "eve" to run tool "echo": policy broken: ` +
			"record does not have the attribute `device` (policy.deny.evaluation_error)"},
		{Request{Principal: "ops", Tool: "acme.hello", Skill: "acme.hello"},
			`no policy permits principal "ops" to run skill "acme.hello" (tool "acme.hello") (policy.baseline_deny)`},
	} {
		if got := e.Authorize(tc.r).Plain(tc.r); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.r, got, tc.want)
		}
	}
}

func TestExplainSaysWhatEachPolicyMakesOfARequest(t *testing.T) {
	t.Parallel()
	e := mustSources(t, "a.cedar", `@id("ops-echo")
permit (principal == Principal::"ops", action == Action::"tool.execute", resource == Tool::"echo");
`, "b.cedar", `

@id("no-bob")
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource);
@id("broken")
permit (principal, action == Action::"tool.execute", resource) when { context.device == "x" };
@id("skill")
permit (principal, action == Action::"skill.execute", resource);`)
	got := e.Explain(Request{Principal: "bob", Tool: "echo"})
	type row struct {
		id, effect, file string
		line             int
		applies, failed  bool
	}
	want := []row{{"ops-echo", "permit", "a.cedar", 1, false, false}, {"no-bob", "forbid", "b.cedar", 3, true, false},
		{"broken", "permit", "b.cedar", 5, false, true}}
	if len(got) != len(want) {
		t.Fatalf("%d verdicts, want %d (skill.execute only for a skill): %+v", len(got), len(want), got)
	}
	for i, v := range got {
		if r := (row{v.ID, v.Effect, v.File, v.Line, v.Applies, v.Error != ""}); r != want[i] || v.Action != ActionToolExecute || v.Text == "" {
			t.Errorf("verdict %d = %+v, want %+v", i, v, want[i])
		}
	}
	if got := e.Explain(Request{Principal: "ops", Tool: "acme.hi", Skill: "acme.hi"}); len(got) != 4 ||
		got[3].ID != "skill" || got[3].Action != ActionSkillExecute || !got[3].Applies {
		t.Errorf("a skill's request: %+v", got)
	}
}
