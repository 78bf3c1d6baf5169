package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/testdb"
)

// TestMain lets a test run this binary as execledger itself (a serve that
// can be killed with SIGKILL) and as tier B's init helper, which main
// dispatches first.
func TestMain(m *testing.M) {
	if os.Getenv("RUN_AS_EXECLEDGER") == "1" || len(os.Args) > 1 && os.Args[1] == procinit.Hidden {
		main()
	}
	os.Exit(m.Run())
}

// processEnv prepares a database, policy and key for serve with
// process.run in tier.
func processEnv(t *testing.T, tier string, extra ...string) (db *testdb.DB, environ []string) {
	t.Helper()
	db = testdb.New(t)
	if err := db.MapPrincipal(context.Background(), "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil { // the sandbox's uid traverses it
			t.Fatal(err)
		}
	}
	pol := filepath.Join(dir, "ops.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal == Principal::"ops", action == Action::"tool.execute", resource);`), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	// serve runs as a login holding ledger_executor and nothing else, as
	// the README documents; clients submit as the superuser mapped to ops.
	exec := db.LoginRole(t, "", "ledger_executor")
	environ = append([]string{"DATABASE_URL=" + exec.URL, "EXECLEDGER_SERVE_LISTEN=", "EXECLEDGER_POLICY_FILES=" + pol,
		"EXECLEDGER_ATTEST_KEY_FILE=" + key, "EXECLEDGER_PROCESS_RUN_ENABLED=true", "EXECLEDGER_PROCESS_RUN_TIER=" + tier,
		"EXECLEDGER_PROCESS_RUN_WORKSPACE_ROOT=" + filepath.Join(dir, "ws"), "EXECLEDGER_PROCESS_RUN_ALLOWED_EXECUTABLES=sleep",
		"EXECLEDGER_EXECUTOR_POLL_INTERVAL=100ms"}, extra...)
	return db, environ
}

// submitJSON submits a request with the command line and returns the
// final request as JSON, waiting for it as long as the test may run.
func submitJSON(t *testing.T, db *testdb.DB, tool, input, run string) map[string]any {
	t.Helper()
	wait := patience(t)
	r := executeWithin(t, wait+30*time.Second, []string{"DATABASE_URL=" + db.URL}, "", "submit", tool, input, "--run", run,
		"--wait", "--timeout", wait.String(), "--json")
	var req map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil {
		t.Fatalf("submit %s: %+v", tool, r)
	}
	return req
}

func workspaceRootOf(environ []string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "EXECLEDGER_PROCESS_RUN_WORKSPACE_ROOT="); ok {
			return v
		}
	}
	return ""
}

func survivorsOf(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), " "+marker) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestBackgroundProcessesSurviveNoExecutorCrash starts a background
// process through ledger.submit, kills the executor with SIGKILL, and
// checks that the process did not outlive it and that the next executor
// accounts for it in the ledger.
func TestBackgroundProcessesSurviveNoExecutorCrash(t *testing.T) {
	for _, tier := range []string{"B", "C"} {
		t.Run(tier, func(t *testing.T) {
			t.Parallel()
			db, environ := processEnv(t, tier, "EXECLEDGER_PROCESS_RUN_ALLOWED_EXECUTABLES=sleep,sh", "EXECLEDGER_PROCESS_RUN_ALLOW_INTERPRETERS=true")
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			child := exec.Command(self, "serve")
			child.Env = append(append(os.Environ(), "RUN_AS_EXECLEDGER=1"), environ...)
			out := &syncBuffer{}
			child.Stdout, child.Stderr = out, out
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = child.Process.Kill()
				_ = child.Wait()
				if t.Failed() {
					t.Logf("the killed serve's output:\n%s", out)
				}
			})

			marker := fmt.Sprint(4000 + time.Now().UnixNano()%1000)
			escapee := fmt.Sprint(5000 + time.Now().UnixNano()%1000)
			// The background process leaves a setsid'd descendant behind,
			// which no parent-death signal reaches.
			ws := filepath.Join(workspaceRootOf(environ), "ops", "r")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf("setsid sleep %s &\nexec sleep %s\n", escapee, marker)
			if err := os.WriteFile(filepath.Join(ws, "bg.sh"), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			req := submitJSON(t, db, "process.run", `{"command":"sh","args":["bg.sh"],"background":true}`, "r")
			output, _ := req["output"].(map[string]any)
			handle, _ := output["handle"].(string)
			if req["state"] != "succeeded" || handle == "" {
				t.Fatalf("background start: %v\n%s", req, out)
			}
			deadline := time.Now().Add(2 * time.Minute)
			for len(survivorsOf(marker)) == 0 || len(survivorsOf(escapee)) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the background process is not running: %v %v", survivorsOf(marker), survivorsOf(escapee))
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()
			deadline = time.Now().Add(2 * time.Minute)
			for len(survivorsOf(marker)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the background process outlived its executor: %v", survivorsOf(marker))
				}
				time.Sleep(20 * time.Millisecond)
			}
			var state string
			if err := db.Pool.QueryRow(context.Background(), "SELECT state FROM ledger.processes WHERE handle = $1", handle).Scan(&state); err != nil || state != "running" {
				t.Fatalf("before recovery: %q %v", state, err)
			}

			// The next executor on this host accounts for it.
			startCommand(t, environ, "serve")
			deadline = time.Now().Add(2 * time.Minute)
			for {
				if err := db.Pool.QueryRow(context.Background(), "SELECT state FROM ledger.processes WHERE handle = $1", handle).Scan(&state); err != nil {
					t.Fatal(err)
				}
				if state != "running" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the dead executor's process is still recorded as running")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if state != "lost" && state != "ended" {
				t.Fatalf("state %s", state)
			}
			// Tier C's pid namespace took the escapee with it; in tier B the
			// next executor's sweep of the dead one's cgroup leaves did.
			deadline = time.Now().Add(2 * time.Minute)
			for len(survivorsOf(escapee)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("a setsid'd descendant of the background process survived its executor and the next one: %v", survivorsOf(escapee))
				}
				time.Sleep(20 * time.Millisecond)
			}
			st := submitJSON(t, db, "process.status", fmt.Sprintf(`{"handle":%q}`, handle), "r")
			so, _ := st["output"].(map[string]any)
			if st["state"] != "succeeded" || so["state"] != state {
				t.Fatalf("process.status: %v", st)
			}
			// Another run cannot ask.
			if st := submitJSON(t, db, "process.status", fmt.Sprintf(`{"handle":%q}`, handle), "other"); st["error_kind"] != "capability_denied" {
				t.Fatalf("foreign process.status: %v", st)
			}
		})
	}
}
