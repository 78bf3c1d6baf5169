package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/readmodel"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// requestsEnv is a served ledger with three logins: alice submits, carol
// submits and approves, and an auditor reads everything.
type requestsEnv struct {
	db                    *testdb.DB
	alice, carol, auditor []string // each login's environment
	attestPub             string   // the attestation key's public half
}

func newRequestsEnv(t *testing.T) *requestsEnv {
	t.Helper()
	db := testdb.New(t)
	alice := db.LoginRole(t, "alice", "ledger_submitter")
	carol := db.LoginRole(t, "carol", "ledger_submitter", "ledger_approver")
	auditor := db.LoginRole(t, "", "ledger_auditor")
	dir := t.TempDir()
	pol := filepath.Join(dir, "requests.cedar")
	text := `@id("alice-and-carol-run")
permit (principal, action == Action::"tool.execute", resource)
when { principal == Principal::"alice" || principal == Principal::"carol" };`
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	serveEnv := []string{"DATABASE_URL=" + db.URL, "EXECLEDGER_POLICY_FILES=" + pol, "EXECLEDGER_ATTEST_KEY_FILE=" + key,
		"EXECLEDGER_EXECUTOR_SENSITIVE=sleep", "EXECLEDGER_SERVE_LISTEN="}
	startCommand(t, serveEnv, "serve")
	return &requestsEnv{db: db, alice: []string{"DATABASE_URL=" + alice.URL}, carol: []string{"DATABASE_URL=" + carol.URL},
		auditor: []string{"DATABASE_URL=" + auditor.URL}, attestPub: key + ".pub"}
}

func submitID(t *testing.T, environ []string, args ...string) uuid.UUID {
	t.Helper()
	r := execute(t, environ, "", append([]string{"submit"}, args...)...)
	if r.code != exitOK {
		t.Fatalf("submit %v: %+v", args, r)
	}
	id, err := uuid.Parse(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("submit printed %q", r.stdout)
	}
	return id
}

func waitState(t *testing.T, environ []string, id uuid.UUID, want ledger.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := execute(t, environ, "", "status", id.String(), "--json")
		var req ledger.Request
		if r.code == exitOK && json.Unmarshal([]byte(r.stdout), &req) == nil && req.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s never became %s: %+v", id, want, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRequestsListShowApproveDenyCancel(t *testing.T) {
	t.Parallel()
	e := newRequestsEnv(t)
	echo := submitID(t, e.alice, "echo", `{"text":"hi"}`, "--run", "r1")
	waitState(t, e.alice, echo, ledger.StateSucceeded)
	approveMe := submitID(t, e.alice, "sleep", `{"ms":1}`)
	denyMe := submitID(t, e.alice, "sleep", `{"ms":2}`)
	waitState(t, e.alice, approveMe, ledger.StateAwaitingApproval)
	waitState(t, e.alice, denyMe, ledger.StateAwaitingApproval)
	carols := submitID(t, e.carol, "sleep", `{"ms":3}`)
	waitState(t, e.carol, carols, ledger.StateAwaitingApproval)

	// list: a submitter sees its own requests, newest first; filters.
	r := execute(t, e.alice, "", "requests", "list", "--json")
	var reqs []ledger.Request
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &reqs) != nil || len(reqs) != 3 ||
		reqs[0].ID != denyMe || reqs[2].ID != echo {
		t.Fatalf("list --json as alice: %+v", r)
	}
	r = execute(t, e.auditor, "", "requests", "list", "--state", "awaiting_approval", "--principal", "carol", "--json")
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &reqs) != nil || len(reqs) != 1 || reqs[0].ID != carols {
		t.Fatalf("list --state --principal as the auditor: %+v", r)
	}
	r = execute(t, e.alice, "", "requests", "list")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "ID ") || strings.Count(r.stdout, "\n") != 4 ||
		!strings.Contains(r.stdout, echo.String()) || !strings.Contains(r.stdout, "r1") {
		t.Fatalf("list as a table: %+v", r)
	}
	r = execute(t, e.alice, "", "requests", "list", "--tool", "nothing")
	if r.code != exitOK || r.stdout != "" || !strings.Contains(r.stderr, "no requests") {
		t.Fatalf("list with nothing to show: %+v", r)
	}
	for _, bad := range [][]string{{"--state", "done"}, {"--limit", "-1"}, {"--since", "yesterday"}, {"extra"}} {
		if r := execute(t, e.alice, "", append([]string{"requests", "list"}, bad...)...); r.code != exitUsage {
			t.Errorf("list %v: %+v", bad, r)
		}
	}

	// approve and deny: an approver, never the submitter.
	if r := execute(t, e.alice, "", "approve", approveMe.String()); r.code != exitError || !strings.Contains(r.stderr, "ledger_approver") {
		t.Fatalf("approve by a non-approver: %+v", r)
	}
	if r := execute(t, e.carol, "", "approve", carols.String()); r.code != exitError || !strings.Contains(r.stderr, "may not decide") {
		t.Fatalf("approve of one's own request: %+v", r)
	}
	if r := execute(t, e.carol, "", "approve", approveMe.String(), "--input-digest", "sha256:00"); r.code != exitNotOK || strings.Contains(r.stderr, "usage:") {
		t.Fatalf("approve of another input: %+v", r)
	}
	if r := execute(t, e.carol, "", "approve", approveMe.String(), "--note", "reviewed"); r.code != exitOK || !strings.Contains(r.stdout, "approved") {
		t.Fatalf("approve: %+v", r)
	}
	if r := execute(t, e.carol, "", "approve", approveMe.String()); r.code != exitNotOK {
		t.Fatalf("approve twice: %+v", r)
	}
	if r := execute(t, e.carol, "", "deny", denyMe.String(), "--note", "no", "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"id"`) {
		t.Fatalf("deny --json: %+v", r)
	}
	waitState(t, e.alice, approveMe, ledger.StateSucceeded)
	waitState(t, e.alice, denyMe, ledger.StateDenied)
	if r := execute(t, e.carol, "", "approve", uuid.New().String()); r.code != exitNotFound {
		t.Fatalf("approve of no request: %+v", r)
	}

	// cancel: the submitter's own; a final one is not OK; another's is
	// not found.
	if r := execute(t, e.alice, "", "cancel", carols.String()); r.code != exitNotFound {
		t.Fatalf("cancel of another principal's request: %+v", r)
	}
	if r := execute(t, e.carol, "", "cancel", carols.String(), "--reason", "changed my mind"); r.code != exitOK || !strings.Contains(r.stdout, "now cancelled") {
		t.Fatalf("cancel: %+v", r)
	}
	if r := execute(t, e.carol, "", "cancel", carols.String()); r.code != exitNotOK || !strings.Contains(r.stderr, "already ended") {
		t.Fatalf("cancel of a final request: %+v", r)
	}
	if r := execute(t, e.carol, "", "cancel", "not-a-uuid"); r.code != exitUsage {
		t.Fatalf("cancel of a malformed id: %+v", r)
	}

	// show, as the auditor: decisions with their policies, the approval,
	// the attestation and the event trail.
	waitAudit(t, e.db, approveMe, 3)
	r = execute(t, e.auditor, "", "requests", "show", approveMe.String())
	for _, want := range []string{"State:     succeeded", "alice-and-carol-run", "approved", "by carol", "Digest:  sha256:",
		"Key id:", "approval.granted", "request.decided", "execution.completed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = execute(t, e.auditor, "", "requests", "show", approveMe.String(), "--json")
	var d readmodel.Description
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &d) != nil || d.Request.ID != approveMe || len(d.Events) < 6 ||
		d.Attestation == nil || d.Attestation.Statement == nil || d.LogUnreadable != "" {
		t.Fatalf("show --json: %+v", r)
	}
	// The envelope, written out, verifies with the attestation key.
	env := filepath.Join(t.TempDir(), "att.json")
	if r := execute(t, e.auditor, "", "requests", "show", approveMe.String(), "--envelope", env); r.code != exitOK {
		t.Fatalf("show --envelope: %+v", r)
	}
	if r := execute(t, nil, "", "verify", env, "--attest-key", e.attestPub); r.code != exitOK {
		t.Fatalf("verify the shown envelope: %+v", r)
	}
	// As the submitter: no log access, said plainly; the rest is there.
	r = execute(t, e.alice, "", "requests", "show", echo.String())
	if r.code != exitOK || !strings.Contains(r.stdout, "may not read the log") || !strings.Contains(r.stdout, "Digest:") {
		t.Fatalf("show as the submitter: %+v", r)
	}
	if r := execute(t, e.alice, "", "requests", "show", carols.String()); r.code != exitNotFound {
		t.Fatalf("show of another principal's request: %+v", r)
	}
}

// waitAudit waits until the audit trail (an asynchronous projection) has
// n rows of request id.
func waitAudit(t *testing.T, db *testdb.DB, id uuid.UUID, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.audit_trail WHERE request_id = $1", id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit trail has %d rows of %s, want %d", got, id, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeExportsTraces: serve with the standard OTLP variables exports
// the request's spans, in the submitter's trace, to the collector; and the
// request's events carry the trace id. Not parallel: the OTLP exporter
// reads its endpoint from the process environment.
func TestServeExportsTraces(t *testing.T) {
	var mu sync.Mutex
	traces := map[string][]string{} // trace id → span names
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					id := strings.ToLower(strings.TrimSpace(hexOf(s.TraceId)))
					traces[id] = append(traces[id], s.Name)
				}
			}
		}
		mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	db := testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	environ := append([]string{"DATABASE_URL=" + db.URL, "EXECLEDGER_SERVE_LISTEN=",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL}, serviceFiles(t)...)
	stop, out := startCommand(t, environ, "serve")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := execute(t, []string{"DATABASE_URL=" + db.URL}, "", "submit", "echo", `{"text":"traced"}`, "--wait", "--timeout", "30s",
		"--context", `{"traceparent":"00-`+traceID+`-00f067aa0ba902b7-01"}`)
	if r.code != exitOK {
		t.Fatalf("submit: %+v\n%s", r, out.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out.String())
	}
	mu.Lock()
	names := strings.Join(traces[traceID], " ")
	mu.Unlock()
	if strings.Contains(names, "execledger.complete") {
		t.Errorf("trace %s of an inline echo has a complete span: %s", traceID, names)
	}
	// echo runs inline (executor.InlineTool): its outcome is written in
	// the claim's transaction, so it has no execledger.complete span.
	for _, want := range []string{"execledger.request", "execledger.claim", "execledger.authorize", "execledger.run"} {
		if !strings.Contains(names, want) {
			t.Errorf("trace %s lacks %s: %s", traceID, want, names)
		}
	}
	var missing int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ledger.events
		WHERE stream LIKE 'request:%' AND metadata ->> 'trace_id' IS DISTINCT FROM $1`, traceID).Scan(&missing); err != nil || missing != 0 {
		t.Fatalf("%d events without the trace id (%v)", missing, err)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
