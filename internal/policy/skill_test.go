package policy

import "testing"

// TestSkillEntityAttributes: a policy may decide on the installed skill's
// version, publisher and risk, which the executor passes from the
// skill's signed manifest.
func TestSkillEntityAttributes(t *testing.T) {
	t.Parallel()
	e := mustSources(t, "skills.cedar", `
@id("tools") permit (principal, action == Action::"tool.execute", resource);
@id("acme-no-risk") permit (principal, action == Action::"skill.execute", resource)
when { resource.publisher == "acme" && !resource.requires_approval && resource.version != "0.0.1" };`)
	base := Request{Principal: "p", Tool: "acme.hello", Skill: "acme.hello", SkillVersion: "1.0.0", SkillPublisher: "acme"}
	if d := e.Authorize(base); !d.Allowed {
		t.Fatalf("%+v", d)
	}
	for name, r := range map[string]Request{
		"another publisher": func() Request { r := base; r.SkillPublisher = "evil"; return r }(),
		"risky":             func() Request { r := base; r.SkillRequiresApproval = true; return r }(),
		"a banned version":  func() Request { r := base; r.SkillVersion = "0.0.1"; return r }(),
	} {
		if d := e.Authorize(r); d.Allowed || d.Action != ActionSkillExecute {
			t.Errorf("%s: %+v", name, d)
		}
	}
}
