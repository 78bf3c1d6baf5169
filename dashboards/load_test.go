package dashboards_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
)

// call is one request of the load and the state it must end in.
type call struct {
	client *ledger.Client
	tool   string
	input  map[string]any
	run    string
	state  string
}

// load submits requests that move every quota counter and every executor
// metric the dashboards show, for two principals: allowed calls in each
// tier, denials by policy and by an exhausted run budget, fuel (tier A),
// CPU and output (tier C), egress connections both allowed and refused,
// and sandbox kills by timeout (tier C), output limit (tier C) and fuel
// (tier A). It returns once every request is final.
func (s *servedLedger) load(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := s.db.MapPrincipal(ctx, "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	ops := ledger.NewClient(s.db.Pool)
	defer ops.Close()
	bob := ledger.NewClient(s.db.LoginRole(t, "bob", "ledger_submitter").Pool)
	defer bob.Close()
	for run, budget := range map[string]int{"r1": 100, "tight": 1} {
		if _, err := s.db.Pool.Exec(ctx, "SELECT ledger.set_run_budget($1, $2)", run, budget); err != nil {
			t.Fatal(err)
		}
	}
	text := map[string]any{"text": "load"}
	curl := func(path string) map[string]any {
		return map[string]any{"command": "curl", "args": []string{"-fsSL", "--max-time", "10", "http://" + s.upstream + path},
			"requested_egress_hosts": []string{"127.0.0.1"}}
	}
	slow := curl("/slow")
	slow["timeout_ms"] = 1000
	calls := []call{
		{ops, "echo", text, "r1", "succeeded"},
		{ops, "sleep", map[string]any{"ms": 1}, "r1", "denied"},
		{ops, "process.run", map[string]any{"command": "echo", "args": []string{"from", "tier", "C"}}, "r1", "succeeded"},
		{ops, "process.run", curl("/ok"), "r1", "succeeded"},
		{ops, "process.run", curl("/away"), "r1", "failed"},
		{ops, "acme.fuel", map[string]any{}, "r1", "succeeded"},
		{ops, "acme.spin", map[string]any{}, "r1", "failed"},
		{ops, "process.run", slow, "r1", "failed"},
		{ops, "process.run", map[string]any{"command": "echo", "args": []string{strings.Repeat("x", outputLimit+1)}}, "r1", "failed"},
		{bob, "echo", text, "b1", "succeeded"},
		{bob, "sleep", map[string]any{"ms": 1}, "b1", "denied"},
	}
	ids := make([]uuid.UUID, len(calls))
	for i, c := range calls {
		id, err := c.client.Submit(ctx, ledger.SubmitParams{Tool: c.tool, Input: c.input, RunID: c.run})
		if err != nil {
			t.Fatalf("submit %s: %v", c.tool, err)
		}
		ids[i] = id
	}
	// The budget of run tight admits one call: the second is denied,
	// budget_exhausted.
	calls = append(calls, call{ops, "echo", text, "tight", "succeeded"}, call{ops, "echo", text, "tight", "denied"})
	for _, c := range calls[len(ids):] {
		id, err := c.client.Submit(ctx, ledger.SubmitParams{Tool: c.tool, Input: c.input, RunID: c.run})
		if err != nil {
			t.Fatalf("submit %s: %v", c.tool, err)
		}
		ids = append(ids, id)
		s.await(t, c, id)
	}
	for i, c := range calls[:len(calls)-2] {
		s.await(t, c, ids[i])
	}
}

// await waits for a request of the load to be final in the state it must
// end in.
func (s *servedLedger) await(t *testing.T, c call, id uuid.UUID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := c.client.Await(ctx, id)
	if err != nil {
		t.Fatalf("await %s in run %s: %v\n%s", c.tool, c.run, err, s.out)
	}
	if string(r.State) != c.state {
		b, _ := json.Marshal(r)
		t.Fatalf("%s in run %s ended %s, want %s: %s\n%s", c.tool, c.run, r.State, c.state, b, s.out)
	}
}
