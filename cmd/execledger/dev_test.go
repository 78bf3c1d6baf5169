package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/testdb"
)

// devEnv is a dev on a test database (DATABASE_URL set: no embedded
// cluster), with its policy file, keys and workspaces in a directory the
// sandbox's uid can traverse, and the variables a client of it uses.
type devEnv struct {
	db     *testdb.DB
	dir    string // dev's data_dir's parent: policy.cedar and the keys
	client []string
	out    *syncBuffer
}

func startDev(t *testing.T, extra ...string) *devEnv {
	t.Helper()
	db := testdb.New(t)
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil { // the sandbox's uid traverses it
			t.Fatal(err)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	environ := append([]string{"DATABASE_URL=" + db.URL, "EXECLEDGER_DEV_DATA_DIR=" + filepath.Join(dir, "pgdata"),
		"EXECLEDGER_SERVE_LISTEN=" + addr, "EXECLEDGER_PROCESS_RUN_WORKSPACE_ROOT=" + filepath.Join(dir, "ws"),
		"EXECLEDGER_WASM_CACHE_DIR=" + wasmCacheDir(t), "EXECLEDGER_EXECUTOR_POLL_INTERVAL=100ms",
		"EXECLEDGER_POLICY_RELOAD_INTERVAL=100ms"}, extra...)
	_, out := startCommand(t, environ, "dev", "--console=false")
	if code, _ := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d\n%s", code, out.String())
	}
	return &devEnv{db: db, dir: dir, client: []string{"DATABASE_URL=" + db.URL}, out: out}
}

// submit submits tool as environ's login and waits for it, as long as
// the test may run, returning the --json output.
func (d *devEnv) submit(t *testing.T, environ []string, tool, input string, flags ...string) (map[string]any, result) {
	t.Helper()
	wait := patience(t)
	args := append([]string{"submit", tool, input, "--wait", "--timeout", wait.String(), "--json"}, flags...)
	r := executeWithin(t, wait+30*time.Second, environ, "", args...)
	var req map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil {
		t.Fatalf("submit %s: %+v\n%s", tool, r, d.out)
	}
	return req, r
}

// TestDevRunsSkillsAndProcesses is the README's skill walk-through and a
// process.run call against dev as it starts by default (issue 25): dev
// turns on tier A and process.run (tier C where bubblewrap works, else
// B with a warning), and its demo policy permits both to principal demo.
func TestDevRunsSkillsAndProcesses(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	banner := d.out.String()
	if !strings.Contains(banner, "process.run: tier C") && !strings.Contains(banner, "WARNING: process.run runs in tier B") {
		t.Errorf("the banner says nothing of process.run's tier:\n%s", banner)
	}
	if !strings.Contains(banner, filepath.Join(d.dir, "policy.cedar")) || !strings.Contains(banner, "Run budget: 100 calls per run id") {
		t.Errorf("the banner names neither the policy file nor the run budget:\n%s", banner)
	}

	key := filepath.Join(d.dir, "publisher.key")
	skillDir := filepath.Join(d.dir, "acme.hello")
	art := filepath.Join(d.dir, "acme.hello.skill")
	for _, args := range [][]string{
		{"keygen", "--out", key},
		{"skill", "new", "acme.hello", "--dir", skillDir},
		{"skill", "package", skillDir, "--key", key, "--out", art},
		{"skill", "trust", "add", "acme", key + ".pub"},
		{"skill", "install", art},
		{"skill", "enable", "acme.hello"},
	} {
		if r := executeWithin(t, patience(t), d.client, "", args...); r.code != exitOK {
			t.Fatalf("execledger %s: %+v", strings.Join(args, " "), r)
		}
	}
	req, _ := d.submit(t, d.client, "acme.hello", `{"x":1}`)
	if req["state"] != "succeeded" || req["tier"] != "A" {
		t.Fatalf("acme.hello: %v\n%s", req, d.out)
	}
	req, _ = d.submit(t, d.client, "process.run", `{"command":"echo","args":["from","dev"]}`, "--run", "dev-1")
	out, _ := req["output"].(map[string]any)
	if req["state"] != "succeeded" || out["stdout"] != "from dev\n" || (req["tier"] != "C" && req["tier"] != "B") {
		t.Fatalf("process.run: %v\n%s", req, d.out)
	}
	// A tool nothing provides says what would.
	req, _ = d.submit(t, d.client, "acme.nosuch", `{}`)
	if msg, _ := req["error"].(string); req["state"] != "denied" ||
		!strings.Contains(msg, "no [[wasm.modules]] entry registers it and no installed skill provides it") {
		t.Errorf("acme.nosuch: %v", req)
	}
	if r := execute(t, d.client, "", "policy", "explain", req["id"].(string)); r.code != exitOK ||
		!strings.Contains(r.stdout, "Cedar did not decide this request: it was denied at stage support") {
		t.Errorf("policy explain of an unsupported tool: %+v", r)
	}
}

// TestUnsupportedToolNamesTheKey: serve with process.run and tier A off
// (its defaults) denies their tools with the key that turns them on.
func TestUnsupportedToolNamesTheKey(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "all.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal, action, resource);`), 0o644); err != nil {
		t.Fatal(err)
	}
	files := serviceFiles(t)
	environ := append([]string{"DATABASE_URL=" + db.URL, "EXECLEDGER_SERVE_LISTEN=", "EXECLEDGER_EXECUTOR_POLL_INTERVAL=100ms"}, files[1],
		"EXECLEDGER_POLICY_FILES="+pol)
	startCommand(t, environ, "serve")
	d := &devEnv{db: db, out: &syncBuffer{}}
	client := []string{"DATABASE_URL=" + db.URL}
	for tool, want := range map[string]string{
		"process.run": "set [process_run] enabled = true (EXECLEDGER_PROCESS_RUN_ENABLED=true",
		"acme.hello":  "set [wasm] enabled = true (EXECLEDGER_WASM_ENABLED=true",
	} {
		req, r := d.submit(t, client, tool, `{}`)
		if msg, _ := req["error"].(string); r.code != exitNotOK || req["error_kind"] != "policy_denied" ||
			!strings.HasPrefix(msg, `tool "`+tool+`" is not supported by this executor: `) || !strings.Contains(msg, want) {
			t.Errorf("%s: %v, want the hint %q", tool, req, want)
		}
	}
}
