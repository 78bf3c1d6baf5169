package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/testdb"
)

// TestRunBudgetIsShown: submit --wait, status and requests show print what
// is left of the request's run budget (issue 25), as text and --json.
func TestRunBudgetIsShown(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	environ := append([]string{"DATABASE_URL=" + db.URL, "EXECLEDGER_SERVE_LISTEN=", "EXECLEDGER_EXECUTOR_POLL_INTERVAL=100ms"}, serviceFiles(t)...)
	startCommand(t, environ, "serve")
	client := []string{"DATABASE_URL=" + db.URL}
	wait := patience(t).String()

	r := executeWithin(t, patience(t), client, "", "submit", "echo", `{"text":"1"}`, "--run", "b1", "--wait", "--timeout", wait)
	if r.code != exitOK || !strings.Contains(r.stdout, "run budget:   1 of 100 calls used, 99 left (the default, executor.default_max_calls_per_run") {
		t.Fatalf("submit --wait: %+v", r)
	}
	r = executeWithin(t, patience(t), client, "", "submit", "echo", `{"text":"2"}`, "--run", "b1", "--wait", "--timeout", wait, "--json")
	var req struct {
		ID        string
		RunBudget runBudgetView `json:"run_budget"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil || r.code != exitOK ||
		req.RunBudget != (runBudgetView{Limit: 100, Used: 2, Remaining: 98, Default: true}) {
		t.Fatalf("submit --wait --json: %+v %v", r, err)
	}
	if _, err := db.Pool.Exec(context.Background(), `SELECT ledger.set_run_budget('b1', 2)`); err != nil {
		t.Fatal(err)
	}
	r = execute(t, client, "", "requests", "show", req.ID)
	if r.code != exitOK || !strings.Contains(r.stdout, "Run budget:") || !strings.Contains(r.stdout, "2 of 2 calls used, 0 left\n") {
		t.Fatalf("requests show: %+v", r)
	}
	r = execute(t, client, "", "requests", "show", req.ID, "--json")
	var shown struct {
		Request   struct{ ID string }
		RunBudget runBudgetView `json:"run_budget"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.Request.ID != req.ID ||
		shown.RunBudget != (runBudgetView{Limit: 2, Used: 2, Remaining: 0}) {
		t.Fatalf("requests show --json: %+v %v", r, err)
	}
	r = execute(t, client, "", "status", req.ID)
	if r.code != exitOK || !strings.Contains(r.stdout, "run budget:   2 of 2 calls used, 0 left\n") {
		t.Fatalf("status: %+v", r)
	}
	// The third call is over the budget, and says so.
	r = executeWithin(t, patience(t), client, "", "submit", "echo", `{"text":"3"}`, "--run", "b1", "--wait", "--timeout", wait)
	if r.code != exitNotOK || !strings.Contains(r.stdout, "budget_exhausted") || !strings.Contains(r.stdout, "2 of 2 calls used, 0 left") {
		t.Fatalf("over the budget: %+v", r)
	}
}
