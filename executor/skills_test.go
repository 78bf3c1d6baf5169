package executor

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// fakeSkills serves acme.ok with Echo's behaviour under another name, once
// prepared, and refuses acme.off, as an installed skill that is disabled.
type fakeSkills struct {
	prepared atomic.Int32 // Prepare calls
}

type renamed struct{ Echo }

func (renamed) Name() string { return "acme.ok" }

func (f *fakeSkills) Prepare(context.Context) error {
	f.prepared.Add(1)
	return nil
}

func (f *fakeSkills) Resolve(_ context.Context, tx pgx.Tx, tools []string) (map[string]SkillTool, error) {
	if tx == nil {
		panic("Resolve outside the claim's transaction")
	}
	if slices.Contains(tools, "acme.ok") && f.prepared.Load() == 0 {
		return nil, ErrSkillsNotReady
	}
	out := map[string]SkillTool{}
	for _, t := range tools {
		ref := attest.Skill{ID: t, Version: "1.0.0", Publisher: "acme", ArtifactDigest: "sha256:aa", PublisherKey: "ed25519:bb"}
		switch t {
		case "acme.ok":
			out[t] = SkillTool{Tool: renamed{}, Skill: ref, Capabilities: []string{"storage"}}
		case "acme.off":
			out[t] = SkillTool{Skill: ref, Refusal: "skill acme.off 1.0.0: is disabled, not enabled"}
		}
	}
	return out, nil
}

// TestSkillsSeam: a tool no registered tool serves goes to Skills in the
// claim; a refusal denies skill_not_active with its reason, recorded in
// policy.decided with the skill; a served one runs and its attestation
// names the skill; metrics name installed skills' tools, and nothing
// else unknown.
func TestSkillsSeam(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	skills := &fakeSkills{}
	e := setup(t, func(c *Config) { c.Skills, c.Metrics = skills, NewMetrics(reg) })
	ok := submit(t, e.alice, ledger.SubmitParams{Tool: "acme.ok", Input: map[string]any{"text": "hi"}})
	off := submit(t, e.alice, ledger.SubmitParams{Tool: "acme.off", Input: map[string]any{}})
	none := submit(t, e.alice, ledger.SubmitParams{Tool: "acme.none", Input: map[string]any{}})
	if r := await(t, e.alice, ok); r.State != ledger.StateSucceeded {
		t.Fatalf("acme.ok: %+v", r)
	}
	// The first claim found acme.ok unprepared and rolled back: Prepare ran
	// once, outside it, and the claim that ran the call is the only one on
	// the record.
	if n := skills.prepared.Load(); n != 1 {
		t.Errorf("Prepare ran %d times, want 1", n)
	}
	if got := strings.Count(types(e.events(t, ok)), "request.decided"); got != 1 {
		t.Errorf("acme.ok was claimed %d times on the record: %s", got, types(e.events(t, ok)))
	}
	st := e.verifyAttestation(t, waitAttested(t, e, ok))
	b, _ := json.Marshal(st.Predicate)
	if !strings.Contains(string(b), `"skill":{"id":"acme.ok","version":"1.0.0","publisher":"acme","artifact_digest":"sha256:aa","publisher_key":"ed25519:bb"}`) {
		t.Errorf("attestation predicate: %s", b)
	}
	r := await(t, e.alice, off)
	if r.State != ledger.StateDenied || r.ErrorKind == nil || *r.ErrorKind != "skill_not_active" || !strings.Contains(*r.Error, "is disabled") {
		t.Fatalf("acme.off: %+v", r)
	}
	if !strings.Contains(types(e.events(t, off)), "request.decided") {
		t.Fatal("no decision recorded")
	}
	if r := await(t, e.alice, none); r.State != ledger.StateDenied || *r.ErrorKind != "policy_denied" {
		t.Fatalf("a tool nothing serves: %+v", r)
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "execledger_requests_finished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tool" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	for tool, want := range map[string]float64{"acme.ok": 1, "acme.off": 1, "unknown": 1} {
		if got[tool] != want {
			t.Errorf("requests finished with tool label %s: %v, want %v (%v)", tool, got[tool], want, got)
		}
	}
}
