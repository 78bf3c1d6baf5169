package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/testdb"
)

// TestComponentsRunWithTheDocumentedGrants: serve as a login holding only
// ledger_executor, the command-line client as one holding only
// ledger_submitter (and as one holding only ledger_auditor for what
// auditors read). Before migration 006 serve refused to start (no SELECT
// on the schema version table) and then could not register as a waiter
// (ON CONFLICT DO UPDATE needs UPDATE), falling back to polling.
func TestComponentsRunWithTheDocumentedGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	exec := db.LoginRole(t, "", "ledger_executor")
	submitter := db.LoginRole(t, "ops", "ledger_submitter")
	other := db.LoginRole(t, "someone-else", "ledger_submitter")
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	environ := append([]string{"DATABASE_URL=" + exec.URL, "EXECLEDGER_SERVE_LISTEN=" + addr,
		"EXECLEDGER_EXECUTOR_POLL_INTERVAL=1h", "EXECLEDGER_SERVE_LABEL=x1"}, serviceFiles(t)...)
	stop, out := startCommand(t, environ, "serve")
	if code, _ := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d\n%s", code, out)
	}
	// Idle, it registers as a waiter, so that submits NOTIFY it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.queue_waiters").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never registered as a waiter:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The poll interval is an hour: only the NOTIFY can wake it.
	client := []string{"DATABASE_URL=" + submitter.URL}
	r := execute(t, client, "", "submit", "echo", `{"text":"least privilege"}`, "--wait", "--timeout", "30s", "--json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"succeeded"`) || !strings.Contains(r.stdout, "least privilege") {
		t.Fatalf("submit --wait as a submitter: %+v\n%s", r, out)
	}
	id := strings.Split(strings.Split(r.stdout, `"id": "`)[1], `"`)[0]
	if r := execute(t, client, "", "status", id); r.code != exitOK || !strings.Contains(r.stdout, "succeeded") {
		t.Fatalf("status as a submitter: %+v", r)
	}
	if r := execute(t, []string{"DATABASE_URL=" + other.URL}, "", "status", id); r.code != exitNotFound {
		t.Fatalf("status of another principal's request: %+v", r)
	}
	_, metrics := httpGet(t, "http://"+addr+"/metrics")
	if !strings.Contains(metrics, `execledger_database_up{executor="x1"} 1`) || !strings.Contains(metrics, `execledger_requests_finished_total{error_kind="",executor="x1",state="succeeded",tool="echo"} 1`) {
		t.Errorf("/metrics as an executor login:\n%s", metrics)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out)
	}
	for _, bad := range []string{"permission denied", "register waiter", "level=ERROR"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("serve's log says %q:\n%s", bad, out)
		}
	}
}
