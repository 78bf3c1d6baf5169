package dashboards_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// servedLedger is a real `execledger serve` process on a test database:
// the binary built from this tree, running as a login that holds only
// ledger_executor, as the README documents.
type servedLedger struct {
	db       *testdb.DB
	dir      string
	addr     string // of /metrics
	upstream string // host:port of an HTTP server tier C calls may reach
	out      *syncBuffer
}

// The principals of the load: ops may run everything but sleep, bob only
// echo. Serve gives one principal series of its own (quota_metrics_top_k
// 1), so the other ends up in principal="other".
const servePolicy = `
permit (principal == Principal::"ops", action == Action::"tool.execute", resource)
  unless { resource == Tool::"sleep" };
permit (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

// serveLabel is the test serve's serve.label: the executor label of every
// metric it exports.
const serveLabel = "dash-1"

// fuelWAT is a tier A skill that loops a thousand times, so that its calls
// consume fuel, and returns 42.
const fuelWAT = `(module
  (func (export "run") (result i32) (local i32)
    (loop $l
      (local.set 0 (i32.add (local.get 0) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get 0) (i32.const 1000))))
    (i32.const 42)))`

// spinWAT is a tier A skill that loops until its fuel runs out: a kill by
// fuel.
const spinWAT = `(module
  (func (export "run") (result i32)
    (loop $l (br $l))
    (i32.const 0)))`

// outputLimit is the test serve's process_run.output_limit_bytes: the load
// writes more, for a kill by output limit.
const outputLimit = 2048

// startServe builds execledger and runs serve until the test ends, with
// the executor, process.run in tier C with strict egress to a local HTTP
// server, two tier A skills, and the sealer signing checkpoints.
func startServe(t *testing.T) *servedLedger {
	t.Helper()
	s := &servedLedger{db: testdb.New(t), dir: t.TempDir(), out: &syncBuffer{}}
	for d := s.dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil { // the sandbox's uid traverses it
			t.Fatal(err)
		}
	}
	bin := buildExecledger(t, s.dir)
	s.upstream = startUpstream(t)
	s.addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	executorLogin := s.db.LoginRole(t, "", "ledger_executor")
	cmd := exec.Command(bin, "serve", "--config", s.writeConfig(t))
	cmd.Env = append(baseEnv(), "DATABASE_URL="+executorLogin.URL, "EXECLEDGER_SERVE_LISTEN="+s.addr)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("serve: %v\n%s", err, s.out)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("serve did not stop within 30s of SIGTERM\n%s", s.out)
		}
	})
	waitHTTP(t, "http://"+s.addr+"/readyz", exited, s.out)
	return s
}

// writeConfig writes the policy, the signing key, the tier A module and a
// configuration naming them, and returns the configuration's path.
func (s *servedLedger) writeConfig(t *testing.T) string {
	t.Helper()
	write := func(name, body string) string {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pol := write("policy.cedar", servePolicy)
	key := filepath.Join(s.dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	digest := watModule(t, s.dir, "fuel", fuelWAT)
	spin := watModule(t, s.dir, "spin", spinWAT)
	noteKey := filepath.Join(s.dir, "log.note")
	if _, err := ledger.GenerateNoteKey("dashboards.test/log", noteKey); err != nil {
		t.Fatal(err)
	}
	_, upstreamPort, _ := net.SplitHostPort(s.upstream)
	return write("execledger.toml", fmt.Sprintf(`
[serve]
quota_metrics_top_k = 1
label = %q

[sealer]
note_key_file = %q

[executor]
poll_interval = "100ms"

[policy]
files = [%q]

[attest]
key_file = %q

[process_run]
enabled = true
tier = "C"
workspace_root = %q
allowed_executables = ["echo", "curl"]
egress_mode = "strict"
egress_allowlist = ["127.0.0.1"]
egress_ports = [%s]
egress_private_ranges = ["127.0.0.1/32"]
output_limit_bytes = %d

[wasm]
enabled = true

[[wasm.modules]]
tool = "acme.fuel"
path = "fuel.wasm"
sha256 = %q

[[wasm.modules]]
tool = "acme.spin"
path = "spin.wasm"
sha256 = %q
fuel_limit = 100000
`, serveLabel, noteKey, pol, key, filepath.Join(s.dir, "ws"), upstreamPort, outputLimit, digest, spin))
}

// buildExecledger builds cmd/execledger from this tree into dir.
func buildExecledger(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "execledger")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/execledger")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/execledger: %v\n%s", err, out)
	}
	return bin
}

// watModule compiles wat with wat2wasm into dir/name.wasm and returns
// the module's sha256.
func watModule(t *testing.T, dir, name, wat string) string {
	t.Helper()
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (WABT) builds the test's WebAssembly module; `make test` installs it: %v", err)
	}
	src := filepath.Join(dir, name+".wat")
	if err := os.WriteFile(src, []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".wasm")
	if b, err := exec.Command(wat2wasm, src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// startUpstream serves /ok; /away, which redirects to a port the egress
// proxy refuses; and /slow, which answers once the client has gone or after
// a minute. It returns its host:port.
func startUpstream(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "upstream ok") })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/refused", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// baseEnv is the environment of the processes the test starts: enough to
// run, and no EXECLEDGER_ variable of the caller's.
func baseEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitHTTP polls url until it answers 200, failing early when the process
// behind it exits.
func waitHTTP(t *testing.T, url string, exited <-chan error, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("%s: the process exited (%v) before answering\n%s", url, err, out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within 60s (%v)\n%s", url, err, out)
		}
	}
}

// get returns the body of a GET of url that answers 200.
func get(t *testing.T, url string) []byte {
	t.Helper()
	status, body, err := fetch(url)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, status, err, body)
	}
	return body
}

// fetch GETs url within 10 seconds.
func fetch(url string) (status int, body []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// syncBuffer collects a process's output while it runs.
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
