package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startCommand runs a long-lived command until the test cancels it.
func startCommand(t testing.TB, environ []string, args ...string) (stop func() int, out *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &stdio{in: strings.NewReader(""), out: out, err: out}, environ) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(2 * time.Minute):
				t.Errorf("%v did not stop within 2 minutes", args)
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stop, out
}

// httpGet gets url once something answers there, waiting for it as long
// as the test may run: dev's embedded PostgreSQL (initdb, start, migrate)
// has taken over 30 s on a loaded machine before serve listens.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	// dev initializes a cluster and migrates it before it listens: on a
	// loaded machine that alone took close to 30 s. Wait as long as the
	// test may run.
	deadline := time.Now().Add(patience(t))
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serviceFiles writes a policy that lets principal ops run echo and a
// signing key, and returns the variables that name them.
func serviceFiles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	pol := filepath.Join(dir, "ops.cedar")
	text := `permit (principal == Principal::"ops", action == Action::"tool.execute", resource == Tool::"echo");`
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	return []string{"EXECLEDGER_POLICY_FILES=" + pol, "EXECLEDGER_ATTEST_KEY_FILE=" + key}
}

func TestServeRunsRequestsAndExposesMetrics(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	consoleAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	environ := append([]string{"DATABASE_URL=" + db.URL, "EXECLEDGER_SERVE_LISTEN=" + addr, "EXECLEDGER_SERVE_LABEL=x1",
		"EXECLEDGER_CONSOLE_LISTEN=" + consoleAddr}, serviceFiles(t)...)
	// Submitted before serve starts: the executor picks it up.
	if r := execute(t, []string{"DATABASE_URL=" + db.URL}, "", "submit", "sleep", `{"ms":1}`); r.code != exitOK {
		t.Fatal(r)
	}
	stop, out := startCommand(t, environ, "serve", "--console")
	if code, body := httpGet(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	// serve --console serves the console beside the executor.
	if code, body := httpGet(t, "http://"+consoleAddr+"/signin"); code != 200 || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("console /signin: %d", code)
	}
	if code, _ := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}
	// echo is allowed for ops and succeeds; sleep is not and is denied.
	r := execute(t, []string{"DATABASE_URL=" + db.URL}, "", "submit", "echo", `{"text":"served"}`, "--wait", "--timeout", "30s")
	if r.code != exitOK || !strings.Contains(r.stdout, "state:        succeeded") || !strings.Contains(r.stdout, `"served"`) {
		t.Fatalf("submit --wait: %+v\n%s", r, out.String())
	}
	r = execute(t, []string{"DATABASE_URL=" + db.URL}, "", "submit", "sleep", `{"ms":1}`, "--wait", "--timeout", "30s")
	if r.code != exitNotOK || !strings.Contains(r.stdout, "state:        denied") {
		t.Fatalf("submit --wait of a denied tool: %+v", r)
	}
	_, metrics := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{`execledger_queue_depth{executor="x1",state="pending"} 0`, `execledger_database_up{executor="x1"} 1`, "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out.String())
	}
}

func TestDevWithEmbeddedPostgres(t *testing.T) {
	t.Parallel()
	parent, err := os.MkdirTemp("/var/tmp", "execledger-dev-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	consoleAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	environ := []string{"EXECLEDGER_DEV_DATA_DIR=" + parent + "/pgdata", "EXECLEDGER_SERVE_LISTEN=" + addr,
		"EXECLEDGER_CONSOLE_LISTEN=" + consoleAddr}
	if _, err := os.Stat(parent + "/attest.key"); err == nil {
		t.Fatal("setup: a key exists before dev made one")
	}
	// The first run makes sleep wait for approval, as the README says to
	// try an approval.
	stop, out := startCommand(t, append(slices.Clone(environ), "EXECLEDGER_EXECUTOR_SENSITIVE=sleep"), "dev")
	if code, _ := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d\n%s", code, out.String())
	}
	url := regexp.MustCompile(`DATABASE_URL='([^']+)'`).FindStringSubmatch(out.String())
	if url == nil {
		t.Fatalf("dev printed no DATABASE_URL:\n%s", out.String())
	}
	// dev serves the console and prints its URL (before it accepts).
	if code, body := httpGet(t, "http://"+consoleAddr+"/signin"); code != 200 || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("console /signin: %d", code)
	}
	if !strings.Contains(out.String(), "Console: http://"+consoleAddr+"/") {
		t.Errorf("dev printed no console URL:\n%s", out.String())
	}
	if !regexp.MustCompile(`Ports: PostgreSQL 127\.0\.0\.1:\d+, metrics http://` + regexp.QuoteMeta(addr) + `/metrics, console ` + regexp.QuoteMeta(consoleAddr)).MatchString(out.String()) {
		t.Errorf("dev's banner does not say its ports:\n%s", out.String())
	}
	// The banner says how to approve, as demo_approver, which dev made;
	// the README's walk-through works: a sleep waits, demo_approver sees
	// its input and digest and approves exactly that input.
	for _, want := range []string{"demo_approver", "execledger approvals", "--input-digest", "Tools that wait for approval: sleep."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, out.String())
		}
	}
	approverURL, _ := testdb.WithUser(url[1], "demo_approver")
	approver := []string{"DATABASE_URL=" + approverURL}
	if r := execute(t, approver, "", "approvals"); r.code != exitOK || !strings.Contains(r.stderr, "nothing waits") {
		t.Errorf("approvals as demo_approver: %+v", r)
	}
	r := execute(t, []string{"DATABASE_URL=" + url[1]}, "", "submit", "sleep", `{"ms":1}`)
	if r.code != exitOK {
		t.Fatalf("submit sleep against dev: %+v", r)
	}
	waiting := strings.TrimSpace(r.stdout)
	var digest string
	waitUntil(t, "the sleep to wait for approval", func() bool {
		r := execute(t, approver, "", "approvals", "--json")
		var rows []ledger.Awaiting
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &rows) != nil || len(rows) != 1 || rows[0].ID.String() != waiting {
			return false
		}
		digest = rows[0].InputDigest
		return true
	})
	if r := execute(t, approver, "", "approve", waiting, "--input-digest", digest); r.code != exitOK {
		t.Fatalf("approve as demo_approver: %+v", r)
	}
	waitUntil(t, "the approved sleep to succeed", func() bool {
		r := execute(t, []string{"DATABASE_URL=" + url[1]}, "", "status", waiting)
		return r.code == exitOK && strings.Contains(r.stdout, "succeeded")
	})
	// The demo principal can submit, and demo_alice sees only alice's rows.
	if r := execute(t, []string{"DATABASE_URL=" + url[1]}, "", "submit", "echo", `{"text":"dev"}`, "--wait", "--timeout", "30s"); r.code != exitOK {
		t.Fatalf("submit against dev: %+v\n%s", r, out.String())
	}
	aliceURL, _ := testdb.WithUser(url[1], "demo_alice")
	conn, err := pgx.Connect(context.Background(), aliceURL)
	if err != nil {
		t.Fatal(err)
	}
	var visible int
	err = conn.QueryRow(context.Background(), "SELECT count(*) FROM ledger.requests").Scan(&visible)
	conn.Close(context.Background())
	if err != nil || visible != 0 {
		t.Fatalf("demo_alice sees %d rows (err %v), want 0", visible, err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("dev exited %d:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "postgres stopped") {
		t.Errorf("the embedded PostgreSQL was not stopped cleanly:\n%s", out.String())
	}
	// The URL is in the file the README names, and a restart reuses the
	// port, so an exported DATABASE_URL still works.
	if b, err := os.ReadFile(parent + "/database_url"); err != nil || strings.TrimSpace(string(b)) != url[1] {
		t.Fatalf("database_url holds %q (%v), dev printed %s", b, err, url[1])
	}
	stop, out = startCommand(t, environ, "dev")
	if code, _ := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz after a restart: %d\n%s", code, out.String())
	}
	again := regexp.MustCompile(`DATABASE_URL='([^']+)'`).FindStringSubmatch(out.String())
	if again == nil || again[1] != url[1] {
		t.Errorf("the restart serves %v, the first run %s", again, url[1])
	}
	if !strings.Contains(out.String(), "No tool waits for approval now") || !strings.Contains(out.String(), "EXECLEDGER_EXECUTOR_SENSITIVE=sleep") {
		t.Errorf("the banner without a sensitive tool does not say how to make one:\n%s", out.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("dev exited %d:\n%s", code, out.String())
	}
}

// TestServeRunsProcesses runs process.run in tier C through ledger.submit:
// an allowlisted program succeeds, a path outside the run's workspace is
// refused.
func TestServeRunsProcesses(t *testing.T) {
	t.Parallel()
	db, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ALLOWED_EXECUTABLES=echo,cat")
	startCommand(t, environ, "serve")

	client := []string{"DATABASE_URL=" + db.URL}
	r := execute(t, client, "", "submit", "process.run", `{"command":"echo","args":["from","a","sandbox"]}`, "--run", "r1",
		"--wait", "--timeout", "30s", "--json")
	var req struct {
		State  string
		Tier   string
		Output struct{ Stdout string }
	}
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &req) != nil || req.Output.Stdout != "from a sandbox\n" || req.Tier != "C" {
		t.Fatalf("process.run echo: %+v", r)
	}
	r = execute(t, client, "", "submit", "process.run", `{"command":"cat","args":["/etc/passwd"]}`, "--run", "r1",
		"--wait", "--timeout", "30s")
	if r.code != exitNotOK || !strings.Contains(r.stdout, "workspace_scope_denied") {
		t.Fatalf("process.run outside the workspace: %+v", r)
	}
}
