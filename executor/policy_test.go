package executor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
)

// TestSetPolicyPutsANewPolicyInForce: SetPolicy publishes the new set
// before any decision names it; the next claims decide with it and their
// decisions and attestations carry its digest.
func TestSetPolicyPutsANewPolicyInForce(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	before := await(t, e.bob, submit(t, e.bob, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}}))
	if before.State != ledger.StateSucceeded {
		t.Fatalf("bob's sleep under the first policy: %+v", before)
	}
	next, err := policy.FromSources([]policy.Source{{Name: "next.cedar", Text: []byte(
		`@id("bob-echoes") permit (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");`)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.exec.SetPolicy(ctx, next); err != nil {
		t.Fatal(err)
	}
	if e.exec.Policy() != next {
		t.Fatal("Policy() is not the policy set")
	}
	var published []string
	if err := e.db.Pool.QueryRow(ctx, `SELECT array_agg(payload ->> 'policy_digest' ORDER BY version) FROM ledger.events
WHERE stream = 'policy' AND type = 'policy.published'`).Scan(&published); err != nil {
		t.Fatal(err)
	}
	if len(published) != 2 || published[0] != e.policy.Digest() || published[1] != next.Digest() {
		t.Fatalf("published %v, want [%s %s]", published, e.policy.Digest(), next.Digest())
	}
	echo := await(t, e.bob, submit(t, e.bob, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "now"}}))
	if echo.State != ledger.StateSucceeded {
		t.Fatalf("bob's echo under the new policy: %+v", echo)
	}
	sleep := await(t, e.bob, submit(t, e.bob, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}}))
	if sleep.State != ledger.StateDenied || sleep.Error == nil ||
		*sleep.Error != `denied by policy: no policy permits principal "bob" to run tool "sleep" (policy.baseline_deny)` {
		t.Fatalf("bob's sleep under the new policy: %+v", sleep)
	}
	for _, r := range []*ledger.Request{echo, sleep} {
		evs := e.events(t, r.ID)
		var d struct {
			PolicyDigest        string   `json:"policy_digest"`
			DeterminingPolicies []string `json:"determining_policies"`
		}
		if err := json.Unmarshal(evs[1].Payload, &d); err != nil || evs[1].Type != "request.decided" || d.PolicyDigest != next.Digest() {
			t.Errorf("%s %s, want request.decided with digest %s", evs[1].Type, evs[1].Payload, next.Digest())
		}
		if st := e.verifyAttestation(t, r); st.Predicate.PolicyDigest != next.Digest() {
			t.Errorf("attestation's policy digest %s, want %s", st.Predicate.PolicyDigest, next.Digest())
		}
	}
	// Setting the same policy again publishes nothing.
	if err := e.exec.SetPolicy(ctx, next); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events WHERE stream = 'policy'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d policy events after setting the same policy, want 2 (%v)", n, err)
	}
}

// TestUnsupportedToolSaysHowToEnableIt: the denial of a tool the executor
// does not run carries the configuration's hint, after the message
// readers know.
func TestUnsupportedToolSaysHowToEnableIt(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) {
		c.UnsupportedHint = func(tool string) string {
			if tool == "process.run" {
				return "set [process_run] enabled = true"
			}
			return ""
		}
	})
	r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "process.run", Input: map[string]any{}}))
	want := `tool "process.run" is not supported by this executor: set [process_run] enabled = true`
	if r.State != ledger.StateDenied || r.ErrorKind == nil || *r.ErrorKind != ledger.KindPolicyDenied || r.Error == nil || *r.Error != want {
		t.Fatalf("process.run: %+v, want error %q", r, want)
	}
	r = await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "no.such", Input: map[string]any{}}))
	if r.Error == nil || *r.Error != `tool "no.such" is not supported by this executor` {
		t.Fatalf("no.such: %+v", r)
	}
}

// TestRunBudget: ledger.run_budget shows a run's budget to its principal,
// and to auditors, executors and admins; not to another submitter.
func TestRunBudget(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	for range 3 {
		if r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}, RunID: "r-b"})); r.State != ledger.StateSucceeded {
			t.Fatal(r)
		}
	}
	b, err := e.alice.RunBudget(ctx, "", "r-b")
	if err != nil || b.MaxCalls != nil || b.Used != 3 || b.Ended || b.Remaining(Config{}.WithDefaults().DefaultMaxCallsPerRun) != 97 {
		t.Fatalf("alice's run: %+v %v", b, err)
	}
	if _, err := e.alice.RunBudget(ctx, "alice", "r-b"); err != nil {
		t.Fatalf("alice naming herself: %v", err)
	}
	if _, err := e.bob.RunBudget(ctx, "alice", "r-b"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("bob reading alice's run: %v, want ErrNotFound", err)
	}
	if _, err := e.aliceSQL.Pool.Exec(ctx, "SELECT ledger.set_run_budget('r-b', 2)"); err != nil {
		t.Fatal(err)
	}
	auditor := ledger.NewClient(e.db.LoginRole(t, "", "ledger_auditor").Pool)
	defer auditor.Close()
	b, err = auditor.RunBudget(ctx, "alice", "r-b")
	if err != nil || b.MaxCalls == nil || *b.MaxCalls != 2 || b.Used != 3 || b.Remaining(100) != 0 {
		t.Fatalf("the auditor's view after set_run_budget 2: %+v %v", b, err)
	}
	// A run with no event has used nothing.
	if b, err := e.bob.RunBudget(ctx, "", "fresh"); err != nil || b.Used != 0 || b.MaxCalls != nil {
		t.Fatalf("a fresh run: %+v %v", b, err)
	}
}
