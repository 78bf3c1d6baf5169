package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

type result struct {
	code           int
	stdout, stderr string
}

func execute(t testing.TB, environ []string, stdin string, args ...string) result {
	t.Helper()
	return executeWithin(t, time.Minute, environ, stdin, args...)
}

// patience bounds a wait for a condition that must come but that load
// makes slow (a request becoming final after serve compiled a Go skill
// under the race detector, which has taken minutes on two loaded
// cores): what is left of go test's -timeout less a minute, so that the
// test fails with its own message instead of the binary's panic; ten
// minutes without a -timeout.
func patience(t *testing.T) time.Duration {
	d, ok := t.Deadline()
	if !ok {
		return 10 * time.Minute
	}
	return max(time.Until(d)-time.Minute, time.Second)
}

// executeWithin is execute with a deadline other than a minute.
func executeWithin(t testing.TB, d time.Duration, environ []string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	code := run(ctx, args, &stdio{in: strings.NewReader(stdin), out: &out, err: &errb}, environ)
	return result{code, out.String(), errb.String()}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "cli"); err != nil {
		t.Fatal(err)
	}
	environ := []string{"DATABASE_URL=" + db.URL}

	if r := execute(t, environ, "", "migrate"); r.code != exitOK || !strings.Contains(r.stdout, "schema at version") {
		t.Fatalf("migrate: %+v", r)
	}
	if r := execute(t, environ, "", "migrate", "--status"); r.code != exitOK {
		t.Fatalf("migrate --status: %+v", r)
	}

	r := execute(t, environ, "", "submit", "echo", `{"text":"hi"}`, "--run", "r1", "--key", "k1",
		"--context", `{"device":"d1"}`)
	if r.code != exitOK {
		t.Fatalf("submit: %+v", r)
	}
	id, err := uuid.Parse(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("submit printed %q", r.stdout)
	}
	// The same key again: the same id.
	if again := execute(t, environ, "", "submit", "--key", "k1", "--run", "r1", "echo", `{"text":"hi"}`, "--context", `{"device":"d1"}`); strings.TrimSpace(again.stdout) != id.String() {
		t.Fatalf("idempotent submit: %+v", again)
	}
	// Input from stdin, JSON output.
	r = execute(t, environ, `{"text":"from stdin"}`, "submit", "--json", "echo", "-")
	var sub struct{ ID uuid.UUID }
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &sub) != nil || sub.ID == uuid.Nil {
		t.Fatalf("submit --json: %+v", r)
	}

	r = execute(t, environ, "", "status", id.String(), "--json")
	var req ledger.Request
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &req) != nil || req.ID != id || req.State != ledger.StatePending ||
		req.Principal != "cli" || *req.RunID != "r1" {
		t.Fatalf("status --json: %+v", r)
	}
	if r = execute(t, environ, "", "status", id.String()); r.code != exitOK || !strings.Contains(r.stdout, "state:        pending") {
		t.Fatalf("status: %+v", r)
	}

	// A wait that ends before the request does.
	if r = execute(t, environ, "", "submit", "echo", `{}`, "--wait", "--timeout", "200ms"); r.code != exitTimeout {
		t.Fatalf("submit --wait with nothing to run it: %+v", r)
	}
	// A wait that the caller's context ends first is not --timeout's.
	if r = executeWithin(t, 5*time.Second, environ, "", "submit", "echo", `{}`, "--wait", "--timeout", "1h"); r.code != exitError ||
		strings.Contains(r.stderr, "not final after") || !strings.Contains(r.stderr, "deadline exceeded") {
		t.Fatalf("submit --wait whose context ends first: %+v", r)
	}
	// A wait on a request that gets cancelled: not OK.
	done := make(chan result, 1)
	go func() {
		done <- execute(t, environ, "", "submit", "sleep", `{"ms":1}`, "--key", "to-cancel", "--wait", "--timeout", "30s")
	}()
	client := ledger.NewClient(db.Pool)
	defer client.Close()
	var cancelled bool
	for deadline := time.Now().Add(20 * time.Second); !cancelled && time.Now().Before(deadline); {
		var target uuid.UUID
		if db.Pool.QueryRow(context.Background(), "SELECT id FROM ledger.request_status WHERE idempotency_key = 'to-cancel'").Scan(&target) == nil {
			time.Sleep(100 * time.Millisecond) // let the waiter subscribe
			cancelled, err = client.Cancel(context.Background(), target, "test")
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r = <-done; r.code != exitNotOK || !strings.Contains(r.stdout, "state:        cancelled") {
		t.Fatalf("submit --wait on a cancelled request: %+v", r)
	}
}

func TestCommandLineErrors(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "cli"); err != nil {
		t.Fatal(err)
	}
	environ := []string{"DATABASE_URL=" + db.URL}
	for _, tc := range []struct {
		name    string
		environ []string
		args    []string
		code    int
		stderr  string
	}{
		{"no command", environ, nil, exitUsage, "usage:"},
		{"unknown command", environ, []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"submit without input", environ, []string{"submit", "echo"}, exitUsage, "usage: execledger submit"},
		{"submit bad JSON", environ, []string{"submit", "echo", "{"}, exitUsage, "not valid JSON"},
		{"submit array", environ, []string{"submit", "echo", "[1]"}, exitUsage, "not a JSON object"},
		{"submit bad tool", environ, []string{"submit", "no tool", "{}"}, exitUsage, "dotted identifier"},
		{"submit bad context", environ, []string{"submit", "echo", "{}", "--context", `{"devise":"x"}`}, exitUsage, "--context"},
		{"status bad id", environ, []string{"status", "nope"}, exitUsage, "not a request id"},
		{"status unknown id", environ, []string{"status", uuid.NewString()}, exitNotFound, "no request"},
		{"no database", nil, []string{"status", uuid.NewString()}, exitError, "no database"},
		{"bad config variable", append([]string{"EXECLEDGER_NOPE=1"}, environ...), []string{"migrate"}, exitError, "EXECLEDGER_NOPE"},
		{"unreachable database", []string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, []string{"status", uuid.NewString()}, exitError, "connect to"},
	} {
		r := execute(t, tc.environ, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%s: code %d, stderr %q; want %d and %q", tc.name, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
}

// TestServeNeedsAPolicyAndAKey: no executor runs unauthorized or unsigned.
func TestServeNeedsAPolicyAndAKey(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	files := serviceFiles(t)
	for _, tc := range []struct {
		environ []string
		want    string
	}{
		{[]string{files[1]}, "policy.files"},
		{[]string{files[0]}, "attest.key_file"},
		{[]string{files[0], "EXECLEDGER_ATTEST_KEY_FILE=/nonexistent/key"}, "/nonexistent/key"},
		{[]string{"EXECLEDGER_POLICY_FILES=/nonexistent.cedar", files[1]}, "/nonexistent.cedar"},
	} {
		r := execute(t, append([]string{"DATABASE_URL=" + db.URL}, tc.environ...), "", "serve")
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %+v", tc.environ, r)
		}
	}
}

// TestServeRefusesAnUnmigratedDatabase checks serve's schema guard.
func TestServeRefusesAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if _, err := db.Pool.Exec(context.Background(), "UPDATE public.execledger_schema_version SET version = 1"); err != nil {
		t.Fatal(err)
	}
	r := execute(t, append([]string{"DATABASE_URL=" + db.URL, "EXECLEDGER_SERVE_LISTEN=127.0.0.1:0"}, serviceFiles(t)...), "", "serve")
	if r.code != exitError || !strings.Contains(r.stderr, "run `execledger migrate`") {
		t.Fatalf("serve on an old schema: %+v", r)
	}
}

// TestMigrateStatusShowsPendingDefinitions: a definition whose record is
// gone is pending in `migrate --status` (exit 3), serve refuses to start,
// and `migrate` applies it.
func TestMigrateStatusShowsPendingDefinitions(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	environ := []string{"DATABASE_URL=" + db.URL}
	if r := execute(t, environ, "", "migrate", "--status"); r.code != exitOK || !strings.Contains(r.stdout, ", 0 definitions pending") {
		t.Fatalf("status of a migrated database: %+v", r)
	}
	if _, err := db.Pool.Exec(context.Background(), "DELETE FROM public.execledger_definitions WHERE name = 'api/submit.sql'"); err != nil {
		t.Fatal(err)
	}
	r := execute(t, environ, "", "migrate", "--status")
	if r.code != exitNotOK || !strings.Contains(r.stdout, ", 1 definitions pending\npending definition api/submit.sql\n") {
		t.Fatalf("status with a pending definition: %+v", r)
	}
	r = execute(t, append(append(environ, "EXECLEDGER_SERVE_LISTEN=127.0.0.1:0"), serviceFiles(t)...), "", "serve")
	if r.code != exitError || !strings.Contains(r.stderr, "api/submit.sql") || !strings.Contains(r.stderr, "run `execledger migrate`") {
		t.Fatalf("serve with a pending definition: %+v", r)
	}
	if r := execute(t, environ, "", "migrate"); r.code != exitOK || !strings.Contains(r.stdout, "1 definitions applied\napplied definition api/submit.sql\n") {
		t.Fatalf("migrate: %+v", r)
	}
	if r := execute(t, environ, "", "migrate", "--status"); r.code != exitOK {
		t.Fatalf("status after migrate: %+v", r)
	}
}

func TestKeygen(t *testing.T) {
	t.Parallel()
	out := t.TempDir() + "/attest.key"
	r := execute(t, nil, "", "keygen", "--out", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "key ed25519:") {
		t.Fatalf("keygen: %+v", r)
	}
	signer, err := attest.LoadSigner(out)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := attest.LoadPublicKey(out + ".pub")
	if err != nil || !pub.Equal(signer.PublicKey()) {
		t.Fatalf("public key file: %v", err)
	}
	// An existing key is never overwritten.
	if r := execute(t, nil, "", "keygen", "--out", out); r.code != exitError {
		t.Fatalf("keygen over an existing key: %+v", r)
	}
}
