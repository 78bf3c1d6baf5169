package executor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/execledger/execledger/ledger"
)

// gated is a tool whose Prepare decides by the input's "check": "scope"
// refuses with workspace_scope_denied, "panic" panics, "odd" refuses with
// a kind outside the contract, anything else passes the word on to Run,
// which must receive it as Call.Prepared.
type gated struct{}

func (gated) Name() string       { return "test.gated" }
func (gated) Executor() string   { return "builtin" }
func (gated) Tier() string       { return "builtin" }
func (gated) SafeToRepeat() bool { return true }

func (gated) Prepare(_ context.Context, call Call) (any, error) {
	var in struct{ Check string }
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, err
	}
	switch in.Check {
	case "scope":
		return nil, &Refusal{Kind: ledger.KindWorkspaceScopeDenied, Reason: "workspace.path_escape", Message: "path x is outside the workspace"}
	case "panic":
		panic("a bug in a tool's checks")
	case "odd":
		return nil, &Refusal{Kind: "not_a_kind", Message: "refused oddly"}
	}
	return "prepared:" + in.Check, nil
}

func (gated) Run(_ context.Context, call Call) Result {
	out, _ := json.Marshal(map[string]any{"prepared": call.Prepared})
	return Result{Output: out}
}

// TestPrepareRunsBeforeTheBudget: a tool's own checks (Prepare) run at
// claim time, after the policy and before the budget is charged or
// execution.started recorded. A refusal ends the request denied with the
// refusal's kind and costs the run nothing; a panicking Prepare or a kind
// outside the contract ends its request denied runtime_failure and leaves
// the executor running; what Prepare returns reaches Run.
func TestPrepareRunsBeforeTheBudget(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, gated{})
	ctx := context.Background()
	if _, err := e.aliceSQL.Pool.Exec(ctx, "SELECT ledger.set_run_budget('r-prep', 1)"); err != nil {
		t.Fatal(err)
	}
	call := func(check string) *ledger.Request {
		t.Helper()
		return await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "test.gated", Input: map[string]any{"check": check}, RunID: "r-prep"}))
	}
	for _, tc := range []struct {
		check, reason, toolReason string
		kind                      ledger.ErrorKind
	}{
		{"scope", "tool.workspace_scope_denied", "workspace.path_escape", ledger.KindWorkspaceScopeDenied},
		{"panic", "tool.runtime_failure", "", ledger.KindRuntimeFailure},
		{"odd", "tool.runtime_failure", "", ledger.KindRuntimeFailure},
	} {
		r := call(tc.check)
		if r.State != ledger.StateDenied || r.ErrorKind == nil || *r.ErrorKind != tc.kind {
			t.Fatalf("%s: %s %v (%v)", tc.check, r.State, r.ErrorKind, r.Error)
		}
		evs := e.events(t, r.ID)
		var decided map[string]any
		for _, ev := range evs {
			if ev.Type == "request.decided" {
				if err := json.Unmarshal(ev.Payload, &decided); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, m := range []string{"budget", "execution"} {
			if _, ok := decided[m]; ok {
				t.Errorf("%s: a refused call's request.decided has %s: %v", tc.check, m, decided)
			}
		}
		if decided["stage"] != "input" || decided["reason_code"] != tc.reason || decided["error_kind"] != string(tc.kind) {
			t.Errorf("%s: request.decided %v", tc.check, decided)
		}
		if tr, _ := decided["tool_reason"].(string); tr != tc.toolReason {
			t.Errorf("%s: tool_reason %q, want %q", tc.check, tr, tc.toolReason)
		}
	}
	ok := call("fine")
	if ok.State != ledger.StateSucceeded || string(ok.Output) != `{"prepared": "prepared:fine"}` {
		t.Fatalf("the run's one call: %s %s", ok.State, ok.Output)
	}
	if over := call("fine"); over.ErrorKind == nil || *over.ErrorKind != ledger.KindBudgetExhausted {
		t.Fatalf("a second paid call: %+v", over)
	}
}
