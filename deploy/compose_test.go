// Package deploy_test proves that docker-compose.yml runs, without a
// Docker engine: it validates the file with `docker-compose config`, then
// runs the one-shot services serve depends on and serve itself with
// exactly their command, environment and mounted files, against a test
// database, and submits requests as the demo logins. Only what
// substitution documents differs from what the containers would run; a
// new variable, command or mount in the compose file is picked up here
// without a change to the test.
//
// What it cannot reproduce: the containers' uid (65534; the processes run
// as the test's user, and the key files' 0600 mode is what serve checks),
// read-only mounts (copies stand in for bind mounts, so the repository is
// never written), the images' contents (execledger is built from this
// checkout, psql is this host's) and the demo passwords (the test server
// trusts local logins).
package deploy_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testdb"
)

func TestComposeStackServes(t *testing.T) {
	t.Parallel()
	s := loadStack(t)
	serveName := s.serveName(t)
	serve := s.Services[serveName]
	order, waits := s.oneShots(t, serveName)
	dbHost := databaseHost(t, serve)
	for dep, cond := range waits {
		if dep != dbHost {
			t.Fatalf("%s waits for %s (%s): the test stands in only for the database service %s", serveName, dep, cond, dbHost)
		}
	}
	binDir := buildExecledger(t)
	db := testdb.New(t)
	fsys := filesystem{root: t.TempDir()}
	work := t.TempDir()
	port := serve.publishedPort(t, serveName)
	subs := map[string]*substitution{}
	for _, name := range append(order, serveName) {
		subs[name] = &substitution{paths: fsys.paths(t, name, s.Services[name]), dbHost: dbHost, dbURL: db.URL}
	}
	subs[serveName].port, subs[serveName].freePort = port, freePort(t)

	// Every `docker compose up` runs the one-shot services again: the
	// second run must change nothing (the keys above all).
	runOneShots(t, s, order, subs, binDir, work)
	volumes := readTree(t, filepath.Join(fsys.root, "volumes"))
	runOneShots(t, s, order, subs, binDir, work)
	if again := readTree(t, filepath.Join(fsys.root, "volumes")); !equalTrees(volumes, again) {
		t.Errorf("the one-shot services changed their volumes when run again: %v, then %v", keysOf(volumes), keysOf(again))
	}

	base := startServe(t, s, serveName, subs[serveName], binDir, work)
	checkDemoLogins(t, db.URL)
	metricsPath := checkPrometheus(t, s, fsys, serveName, port)
	checkMetrics(t, base+metricsPath)
	checkGrafana(t, s, fsys, db.URL, dbHost)
}

// databaseHost is the host of serve's database URL: the compose service
// the test database stands in for.
func databaseHost(t *testing.T, serve service) string {
	t.Helper()
	for _, k := range []string{"EXECLEDGER_DATABASE_URL", "DATABASE_URL"} {
		if v := serve.Environment[k]; v != nil {
			u, err := url.Parse(*v)
			if err != nil || u.Hostname() == "" {
				t.Fatalf("serve's %s %q: not a URL with a host", k, *v)
			}
			return u.Hostname()
		}
	}
	t.Fatal("serve has no DATABASE_URL")
	return ""
}

// buildExecledger builds the binary the image holds and returns its directory.
func buildExecledger(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "execledger"), "./cmd/execledger")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1") // as the Dockerfile builds it
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/execledger: %v\n%s", err, out)
	}
	return dir
}

func runOneShots(t *testing.T, s stack, order []string, subs map[string]*substitution, binDir, work string) {
	t.Helper()
	for _, name := range order {
		cmd := s.command(t, name, subs[name], binDir, work)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd = withContext(ctx, cmd)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("service %s: %s: %v\n%s", name, strings.Join(cmd.Args, " "), err, out)
		}
		t.Logf("service %s: %s", name, strings.TrimSpace(string(out)))
	}
}

// withContext is cmd, killed when ctx ends.
func withContext(ctx context.Context, cmd *exec.Cmd) *exec.Cmd {
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env, c.Dir = cmd.Env, cmd.Dir
	return c
}

// startServe starts serve, stops it when the test ends, waits until its
// /readyz answers and returns its base URL.
func startServe(t *testing.T, s stack, name string, sub *substitution, binDir, work string) string {
	t.Helper()
	cmd := s.command(t, name, sub, binDir, work)
	if !sub.moved {
		t.Fatalf("%s publishes port %d but listens on it in neither its command nor its environment", name, sub.port)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("serve did not stop within 30s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("serve's output:\n%s", out.String())
		}
	})
	base := "http://127.0.0.1:" + strconv.Itoa(sub.freePort)
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("serve exited: %v", waitErr)
		default:
		}
		if status, _ := httpGet(base + "/readyz"); status == http.StatusOK {
			return base
		}
		if time.Now().After(deadline) {
			t.Fatal("serve is not ready after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpGet(u string) (int, string) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkDemoLogins submits as the demo logins that docs/compose.md lists:
// the demo policy lets alice echo and denies bob; carol approves.
func checkDemoLogins(t *testing.T, dbURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := connectAs(ctx, t, dbURL, "demo_alice")
	id := submit(ctx, t, alice, "echo", `{"text":"hi"}`)
	if st := waitFinal(ctx, t, alice, id); st.state != "succeeded" || st.digest == "" || !strings.Contains(st.output, "hi") {
		t.Errorf("echo as demo_alice: %+v, want succeeded, attested, output hi", st)
	}
	bob := connectAs(ctx, t, dbURL, "demo_bob")
	id = submit(ctx, t, bob, "echo", `{"text":"hi"}`)
	if st := waitFinal(ctx, t, bob, id); st.state != "denied" || st.errorKind != "policy_denied" {
		t.Errorf("echo as demo_bob: %+v, want denied policy_denied (the demo policy forbids it)", st)
	}
	admin := connectAs(ctx, t, dbURL, "postgres")
	for login, want := range map[string]string{"demo": "demo", "demo_alice": "alice", "demo_bob": "bob", "demo_carol": "carol"} {
		var principal string
		var submitter, approver bool
		err := admin.QueryRow(ctx, `SELECT p.principal, pg_has_role(p.login_role, 'ledger_submitter', 'MEMBER'),
			pg_has_role(p.login_role, 'ledger_approver', 'MEMBER') FROM ledger.principals p WHERE p.login_role = $1`, login).
			Scan(&principal, &submitter, &approver)
		if err != nil || principal != want || (login == "demo_carol") != approver || (login != "demo_carol") != submitter {
			t.Errorf("login %s: principal %q submitter %v approver %v (%v), want principal %s", login, principal, submitter, approver, err, want)
		}
	}
}

func connectAs(ctx context.Context, t *testing.T, dbURL, login string) *pgx.Conn {
	t.Helper()
	u, err := testdb.WithUser(dbURL, login)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect as %s: %v", login, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func submit(ctx context.Context, t *testing.T, conn *pgx.Conn, tool, input string) string {
	t.Helper()
	var id string
	if err := conn.QueryRow(ctx, "SELECT ledger.submit($1, $2::jsonb)::text", tool, input).Scan(&id); err != nil {
		t.Fatalf("ledger.submit(%s) as %s: %v", tool, conn.Config().User, err)
	}
	return id
}

type outcome struct {
	state, errorKind, output, digest string
}

// waitFinal polls the request until it reaches a final state.
func waitFinal(ctx context.Context, t *testing.T, conn *pgx.Conn, id string) outcome {
	t.Helper()
	for {
		var o outcome
		err := conn.QueryRow(ctx, `SELECT state, coalesce(error_kind, ''), coalesce(output::text, ''),
			coalesce(attestation_digest, '') FROM ledger.requests WHERE id = $1`, id).
			Scan(&o.state, &o.errorKind, &o.output, &o.digest)
		if err != nil {
			t.Fatalf("request %s: %v", id, err)
		}
		switch o.state {
		case "succeeded", "failed", "denied", "cancelled":
			return o
		}
		select {
		case <-ctx.Done():
			t.Fatalf("request %s is still %s", id, o.state)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkMetrics scrapes serve as Prometheus would.
func checkMetrics(t *testing.T, u string) {
	t.Helper()
	status, body := httpGet(u)
	if status != http.StatusOK || !strings.Contains(body, "execledger_requests_finished_total") {
		t.Errorf("GET %s: %d, want 200 with execledger_requests_finished_total\n%.2000s", u, status, body)
	}
}

// readTree reads every file under dir, by path relative to dir.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// decodeYAMLFile decodes a YAML file into v.
func decodeYAMLFile(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(yamlToJSON(t, b), v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
