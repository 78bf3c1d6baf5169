package processrun

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// Tier C: rlimits, the working directory, and strict egress through the
// host proxy. Every test runs the real bwrap; the "remote" hosts are
// servers on the host's 127.0.0.1, which the proxy treats as private, so
// the tests that reach them allowlist it with EgressPrivateRanges.

// shCall runs script, planted in the run's workspace, under sh.
func shCall(t *testing.T, tool *Tool, runID, script string) executor.Result {
	t.Helper()
	ws := prepare(t, tool, runID)
	if err := os.WriteFile(filepath.Join(ws, "script.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hang bound: a script that does not end (a limit not enforced) ends
	// timed_out after waitLong.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return tool.Run(ctx, call(runID, input(t, "sh", "script.sh")))
}

var interpreters = procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true}

func TestTierCLimitsVisible(t *testing.T) {
	t.Parallel()
	lim := procinit.Limits{CPUSeconds: 3, AddressSpace: 2 << 30, FileSize: 1 << 20, OpenFiles: 100, Processes: 50}
	tool := newTool(t, "C", interpreters, func(c *Config) { c.Limits = lim })
	res := shCall(t, tool, "run-1", "cat /proc/self/limits\n")
	if res.ErrorKind != "" {
		t.Fatalf("%s: %s (%s)", res.ErrorKind, res.Error, res.Output)
	}
	got := map[string]string{}
	for _, line := range strings.Split(decode(t, res).Stdout, "\n") {
		if len(line) > 26 {
			if f := strings.Fields(line[26:]); len(f) >= 2 {
				got[strings.TrimSpace(line[:26])] = f[0] + " " + f[1]
			}
		}
	}
	for k, v := range map[string]string{
		"Max cpu time": "3 3", "Max address space": "2147483648 2147483648", "Max file size": "1048576 1048576",
		"Max open files": "100 100", "Max processes": "50 50", "Max core file size": "0 0",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if res.Enforcement["rlimits_applied"] != bwrap.LimitsApplied || res.Enforcement["limits"] != lim {
		t.Errorf("enforcement rlimits %v / %v", res.Enforcement["rlimits_applied"], res.Enforcement["limits"])
	}
	if os.Geteuid() == 0 && res.Enforcement["host_uid"] != uint32(DefaultUID) {
		t.Errorf("a root daemon's sandbox runs as host uid %v, want %d", res.Enforcement["host_uid"], DefaultUID)
	}
}

func TestTierCCPULimitKillsBurner(t *testing.T) {
	t.Parallel()
	tool := newTool(t, "C", interpreters, func(c *Config) { c.Limits = procinit.Limits{CPUSeconds: 1} })
	res := shCall(t, tool, "run-1", "exec sha256sum /dev/zero\n")
	// The init reports the signal; bubblewrap alone reported 128+signal
	// as an exit status.
	o := decode(t, res)
	if o.Signal != int(syscall.SIGKILL) && o.Signal != int(syscall.SIGXCPU) || o.ExitCode != 128+o.Signal {
		t.Fatalf("exit %d signal %d, want SIGKILL or SIGXCPU (%s: %s)", o.ExitCode, o.Signal, res.ErrorKind, res.Error)
	}
	if res.ErrorKind != ledger.KindQuotaExceeded || o.LimitExceeded != limitCPU ||
		res.Error != fmt.Sprintf("killed by %s: CPU limit of 1 s (rlimit_cpu_seconds) reached", unix.SignalName(syscall.Signal(o.Signal))) {
		t.Errorf("%s: %s (limit %q)", res.ErrorKind, res.Error, o.LimitExceeded)
	}
	// Killed after 1 s of CPU, which on an idle core is about 1 s of wall
	// time.
	if o.DurationMS < 900 {
		t.Errorf("killed after %d ms, want about 1 s", o.DurationMS)
	}
}

// TestTierCRecordsTheProgramsUsage: the CPU time a call records is the
// program's, in tier C's offline path as with strict egress and in tier B:
// a shell spinning until RLIMIT_CPU ends it has used about that limit, and
// its end is recorded as that limit's (signal, quota_exceeded).
// (bubblewrap's monitor, which the executor waits for, exits without
// reaping the sandbox's pid 1: its rusage is its own few milliseconds.)
func TestTierCRecordsTheProgramsUsage(t *testing.T) {
	limits := procinit.Limits{CPUSeconds: 1}
	for _, tc := range []struct {
		name string
		tool func(t *testing.T) *Tool
		args []string // the hosts the call declares
	}{
		{"tier_B", func(t *testing.T) *Tool {
			return newTool(t, "B", interpreters, func(c *Config) { c.Limits = limits })
		}, nil},
		{"tier_C", func(t *testing.T) *Tool {
			return newTool(t, "C", interpreters, func(c *Config) { c.Limits = limits })
		}, nil},
		{"tier_C_strict_egress", func(t *testing.T) *Tool {
			e := newEgressEnv(t, true)
			e.tool.cfg.Limits = limits
			return e.tool
		}, []string{"api.allowed.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool := tc.tool(t)
			ws := prepare(t, tool, "run-1")
			if err := os.WriteFile(filepath.Join(ws, "spin.sh"), []byte("while :; do :; done\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"command": "sh", "args": []string{"spin.sh"}, "requested_egress_hosts": tc.args})
			res := tool.Run(context.Background(), call("run-1", string(b)))
			if strings.HasSuffix(tc.name, "egress") && res.Enforcement["egress"].(map[string]any)["proxy_socket"] == nil {
				t.Fatalf("not the strict egress path: %v", res.Enforcement["egress"])
			}
			o := decode(t, res)
			cpu := res.Resources["cpu_user_ms"] + res.Resources["cpu_sys_ms"]
			// As procinit's TestCPULimitKillsBusyLoop: RLIMIT_CPU counts
			// sampled ticks, rusage the exact runtime; under load they
			// differ by a tenth or more.
			if cpu < 500 {
				t.Errorf("recorded %d ms of CPU (%v) for a shell spinning until its 1 s CPU limit (exit %d, %s: %s)",
					cpu, res.Resources, o.ExitCode, res.ErrorKind, res.Error)
			}
			if o.DurationMS < 500 {
				t.Errorf("ended after %d ms, before its CPU limit", o.DurationMS)
			}
			// And how it ended: the signal, and the limit named.
			if o.Signal != int(syscall.SIGKILL) && o.Signal != int(syscall.SIGXCPU) || o.ExitCode != 128+o.Signal ||
				res.ErrorKind != ledger.KindQuotaExceeded || o.LimitExceeded != limitCPU {
				t.Errorf("exit %d signal %d, %s: %s (limit %q), want a CPU limit kill", o.ExitCode, o.Signal, res.ErrorKind, res.Error, o.LimitExceeded)
			}
		})
	}
}

// TestTierCProgramCannotForgeItsReport: the program shares the init's uid
// in tier C, yet cannot reach the init's descriptors through /proc (the
// init is not dumpable), where it could write a usage report of its own
// into the init's pipe: the status recorded is the one it exited with.
// (Here the pipe, made by a root executor, would refuse the open anyway;
// an unprivileged executor's pipe belongs to the sandbox's host uid.)
func TestTierCProgramCannotForgeItsReport(t *testing.T) {
	t.Parallel()
	tool := newTool(t, "C", interpreters)
	res := shCall(t, tool, "run-1", `for fd in /proc/$PPID/fd/*; do
  echo '{"exit_code":0,"signal":0,"cpu_user_ms":0}' > "$fd" 2>/dev/null && echo "wrote $fd"
done
ls /proc/$PPID/fd > /dev/null 2>&1 && echo listed
exit 9
`)
	o := decode(t, res)
	if o.ExitCode != 9 || res.ErrorKind != ledger.KindRuntimeFailure || o.Stdout != "" {
		t.Errorf("exit %d, %s: %s, stdout %q (stderr %q): want the program's own exit 9, nothing written", o.ExitCode, res.ErrorKind, res.Error, o.Stdout, o.Stderr)
	}
}

// TestTierCCgroupLeaf: bubblewrap, and so the whole sandbox, runs in a
// leaf of its own, which is recorded, reported and removed; the leaf's CPU
// time covers the init's report of the program's.
func TestTierCCgroupLeaf(t *testing.T) {
	tool := cgroupTool(t, "C", interpreters)
	res := shCall(t, tool, "run-1", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done\n")
	if res.ErrorKind != "" {
		t.Fatalf("%s: %s (%s)", res.ErrorKind, res.Error, res.Output)
	}
	tbCgroupRecord(t, res)
	program := res.Resources["cpu_user_ms"] + res.Resources["cpu_sys_ms"]
	if leaf := res.Resources["cgroup_cpu_usage_usec"]; program < 20 || leaf < (program-10)*1000 {
		t.Errorf("the leaf used %d µs of CPU, the init reports %d ms for the program: %v", leaf, program, res.Resources)
	}
}

func TestTierCFileSizeLimitStopsWrite(t *testing.T) {
	t.Parallel()
	tool := newTool(t, "C", interpreters, func(c *Config) { c.Limits = procinit.Limits{FileSize: 64 << 10} })
	res := shCall(t, tool, "run-1", "exec dd if=/dev/zero of=big bs=1024 count=200\n")
	if o := decode(t, res); o.ExitCode != 128+int(syscall.SIGXFSZ) || o.Signal != int(syscall.SIGXFSZ) ||
		res.ErrorKind != ledger.KindQuotaExceeded || o.LimitExceeded != limitFileSize ||
		res.Error != "killed by SIGXFSZ: file size limit of 65536 bytes (rlimit_file_size) reached" {
		t.Errorf("exit %d signal %d, %s: %s (%s), want SIGXFSZ, quota_exceeded", o.ExitCode, o.Signal, res.ErrorKind, res.Error, o.Stderr)
	}
	fi, err := os.Stat(filepath.Join(workspaceOf(tool, "run-1"), "big"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 64<<10 {
		t.Errorf("the file grew to %d bytes", fi.Size())
	}
}

// TestTierCForkBombBounded: RLIMIT_NPROC bounds the sandbox's processes.
// The kernel counts them per user namespace and uid, so the bound is this
// sandbox's; it does not apply to host uid 0, which is why a root daemon
// runs bwrap as Config.UID.
func TestTierCForkBombBounded(t *testing.T) {
	t.Parallel()
	tool := newTool(t, "C", interpreters, func(c *Config) { c.Limits = procinit.Limits{Processes: 16} })
	m := "77." + strconv.Itoa(os.Getpid()%99999)
	// dash stops at the first fork that fails.
	res := shCall(t, tool, "run-1", `i=0; while [ $i -lt 100 ]; do sleep `+m+` & i=$((i+1)); echo $i > n; done`)
	b, err := os.ReadFile(filepath.Join(workspaceOf(tool, "run-1"), "n"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	o := decode(t, res)
	t.Logf("started %d sleeps: %s", n, strings.TrimSpace(o.Stderr))
	if res.ErrorKind != ledger.KindRuntimeFailure || n < 5 || n > 14 || !strings.Contains(o.Stderr, "fork") {
		t.Errorf("%d sleeps under RLIMIT_NPROC 16 (bwrap's pid 1, the init's threads and sh count too); %s", n, res.ErrorKind)
	}
	waitNoSurvivors(t, m)
}

func TestTierCCwdBelowWorkspace(t *testing.T) {
	t.Parallel()
	tool := newTool(t, "C", procinput.Policy{AllowedExecutables: []string{"pwd", "ls"}})
	ws := prepare(t, tool, "run-1")
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "deeper", "here.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"command":"pwd","cwd":"sub/deeper"}`: "/workspace/sub/deeper\n",
		`{"command":"pwd","cwd":"sub"}`:        "/workspace/sub\n",
		`{"command":"pwd"}`:                    "/workspace\n",
		`{"command":"ls","cwd":"sub/deeper"}`:  "here.txt\n",
	} {
		res := tool.Run(context.Background(), call("run-1", in))
		if o := decode(t, res); res.ErrorKind != "" || o.Stdout != want {
			t.Errorf("%s: stdout %q, %s %s; want %q", in, o.Stdout, res.ErrorKind, res.Error, want)
		}
		if in == `{"command":"pwd","cwd":"sub/deeper"}` && res.Enforcement["workdir"] != "/workspace/sub/deeper" {
			t.Errorf("workdir recorded %v", res.Enforcement["workdir"])
		}
	}
}

// TestTierCDevAndEtc: /dev has what common programs use and nothing else
// of the host's, /etc the generated and allowlisted files, both from the
// shared skeleton, and the enforcement record says so.
func TestTierCDevAndEtc(t *testing.T) {
	t.Parallel()
	tool := newTool(t, "C", interpreters)
	res := shCall(t, tool, "run-1", `set -e
echo "dev: $(ls -A /dev | tr '\n' ' ')"
echo "etc: $(ls -A /etc | tr '\n' ' ')"
cat /dev/null
echo "urandom: $(head -c 10 /dev/urandom | wc -c)"
echo discarded > /dev/null
echo "zero: $(head -c 3 /dev/zero | od -An -tx1 | tr -d ' ')"
if command -v python3 >/dev/null; then python3 -c 'import multiprocessing; multiprocessing.Lock(); print("semaphore: ok")'; else echo "semaphore: ok"; fi
`)
	o := decode(t, res)
	if res.ErrorKind != "" {
		t.Fatalf("%s: %s (%s, %s)", res.ErrorKind, res.Error, o.Stdout, o.Stderr)
	}
	for _, want := range []string{"dev: fd full null random shm stderr stdin stdout urandom zero \n", "urandom: 10\n", "zero: 000000\n", "semaphore: ok\n"} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, o.Stdout)
		}
	}
	if !strings.Contains(o.Stdout, "etc: group hosts ") || o.Stderr != "" {
		t.Errorf("stdout %q, stderr %q", o.Stdout, o.Stderr)
	}
	sh := mustSharedC(t, tool)
	// Each tool makes its set-up once; tools with the same ids share the
	// skeleton on disk (it is named after its content).
	if again := mustSharedC(t, tool); again != sh {
		t.Error("a tool made its tier C set-up twice")
	}
	if other := newTool(t, "C", interpreters); mustSharedC(t, other).host.Dir() != sh.host.Dir() {
		t.Error("two tools with the same ids do not share their skeleton")
	}
	var devs []string
	seen := map[string]bool{}
	for _, m := range res.Enforcement["mounts"].([]bwrap.Mount) {
		seen[m.Kind+" "+m.Source+" "+m.Dest] = true
		if m.Kind == "dev-bind" {
			devs = append(devs, m.Dest)
		}
		if m.Kind == "dev" || (m.Kind == "ro-bind" && m.Source == "/dev") {
			t.Errorf("mount %+v", m)
		}
	}
	for _, want := range []string{"ro-bind " + sh.host.Dir() + "/etc /etc", "ro-bind " + sh.host.Dir() + "/dev /dev", "symlink /tmp /dev/shm"} {
		if !seen[want] {
			t.Errorf("the record lacks mount %q", want)
		}
	}
	if !slices.Equal(devs, []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
		t.Errorf("device binds recorded: %v", devs)
	}
}

func mustSharedC(t *testing.T, tool *Tool) *sharedC {
	t.Helper()
	sh, err := tool.sharedC()
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// fakeResolver answers the egress proxy from a table; unknown names fail.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

var loopback = netip.MustParseAddr("127.0.0.1")

// egressEnv is a strict-egress tool and the local servers it may reach.
type egressEnv struct {
	tool       *Tool
	port       int // plain HTTP server
	tlsPort    int // HTTPS server
	hits       chan string
	pgPort     int
	privateSet bool
}

// newEgressEnv starts the servers and a tier C tool in strict mode whose
// policy allowlists the *.test names; private allowlists 127.0.0.1/32.
func newEgressEnv(t *testing.T, private bool) *egressEnv {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is required (scripts/ensure-test-deps.sh installs it): %v", err)
	}
	e := &egressEnv{hits: make(chan string, 16), pgPort: 5432, privateSet: private}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits <- r.Host + r.URL.Path
		fmt.Fprintf(w, "hello from %s\n", r.URL.Path)
	})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	tlsSrv := httptest.NewTLSServer(handler)
	t.Cleanup(tlsSrv.Close)
	e.port = srv.Listener.Addr().(*net.TCPAddr).Port
	e.tlsPort = tlsSrv.Listener.Addr().(*net.TCPAddr).Port
	pol := interpreters
	pol.EgressMode = procinput.EgressStrict
	pol.EgressAllowlist = []string{"allowed.test", "private.test"}
	e.tool = newTool(t, "C", pol, func(c *Config) {
		c.EgressPorts = []int{e.port, e.tlsPort, e.pgPort}
		c.EgressResolver = fakeResolver{
			"api.allowed.test": {loopback}, "private.test": {loopback}, "other.test": {loopback},
		}
		c.EgressSocketDir = filepath.Join(c.WorkspaceRoot, "..", "egress")
		if private {
			c.EgressPrivateRanges = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
		}
	})
	return e
}

// run runs script in a run that declares hosts.
func (e *egressEnv) run(t *testing.T, script string, hosts ...string) executor.Result {
	t.Helper()
	ws := prepare(t, e.tool, "run-1")
	if err := os.WriteFile(filepath.Join(ws, "script.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"command": "sh", "args": []string{"script.sh"}, "requested_egress_hosts": hosts})
	if err != nil {
		t.Fatal(err)
	}
	return e.tool.Run(context.Background(), call("run-1", string(b)))
}

// connections returns the payloads of res's egress.connection events.
func connections(t *testing.T, res executor.Result) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range res.Events {
		if ev.Type != "egress.connection" {
			t.Errorf("unexpected event %s", ev.Type)
			continue
		}
		b, err := json.Marshal(ev.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	// Events are recorded as connections end, and the proxy may finish
	// recording one after the client has moved on to the next: order them
	// as the client made them.
	slices.SortStableFunc(out, func(a, b map[string]any) int {
		return startedAt(t, a).Compare(startedAt(t, b))
	})
	return out
}

func startedAt(t *testing.T, p map[string]any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(p["started_at"]))
	if err != nil {
		t.Fatalf("connection %v: started_at: %v", p, err)
	}
	return at
}

// expectConnection checks one event's fields.
func expectConnection(t *testing.T, p map[string]any, host string, port int, allowed bool, reason string) {
	t.Helper()
	if p["host"] != host || p["port"] != float64(port) || p["allowed"] != allowed || p["reason"] != reason {
		t.Errorf("connection %v, want host %s port %d allowed %v reason %s", p, host, port, allowed, reason)
	}
	for _, k := range []string{"method", "address", "end", "bytes_up", "bytes_down", "duration_ms", "started_at"} {
		if _, ok := p[k]; !ok {
			t.Errorf("connection %v lacks %s", p, k)
		}
	}
}

func TestTierCStrictEgressReachesAllowlistedHost(t *testing.T) {
	t.Parallel()
	e := newEgressEnv(t, true)
	script := fmt.Sprintf("curl -sS --max-time 10 http://api.allowed.test:%d/plain\ncurl -sSk --max-time 10 https://api.allowed.test:%d/tls\n", e.port, e.tlsPort)
	res := e.run(t, script, "api.allowed.test")
	o := decode(t, res)
	if res.ErrorKind != "" || o.Stdout != "hello from /plain\nhello from /tls\n" {
		t.Fatalf("%s: %s; stdout %q stderr %q", res.ErrorKind, res.Error, o.Stdout, o.Stderr)
	}
	for _, want := range []string{fmt.Sprintf("api.allowed.test:%d/plain", e.port), fmt.Sprintf("api.allowed.test:%d/tls", e.tlsPort)} {
		select {
		case got := <-e.hits:
			if got != want {
				t.Errorf("server saw %s, want %s", got, want)
			}
		case <-time.After(waitLong):
			t.Fatal("the server saw no request")
		}
	}
	conns := connections(t, res)
	if len(conns) != 2 {
		t.Fatalf("%d egress.connection events, want 2: %v", len(conns), conns)
	}
	expectConnection(t, conns[0], "api.allowed.test", e.port, true, "allowed")
	expectConnection(t, conns[1], "api.allowed.test", e.tlsPort, true, "allowed")
	if conns[0]["method"] != "GET" || conns[1]["method"] != "CONNECT" {
		t.Errorf("methods %v and %v, want GET (forwarded) and CONNECT (tunnelled)", conns[0]["method"], conns[1]["method"])
	}
	for i, c := range conns {
		if c["address"] != fmt.Sprintf("127.0.0.1:%d", []int{e.port, e.tlsPort}[i]) || c["bytes_up"].(float64) <= 0 || c["bytes_down"].(float64) <= 0 {
			t.Errorf("connection %d: %v", i, c)
		}
	}
	if res.Resources["egress_connections"] != 2 || res.Resources["egress_refused"] != 0 || res.Resources["egress_bytes_down"] <= 0 {
		t.Errorf("resources %v", res.Resources)
	}
	enf := res.Enforcement
	eg, _ := enf["egress"].(map[string]any)
	if eg == nil || eg["mode"] != "strict" || eg["proxy_socket"] != bwrap.ProxyPath || eg["bridge"] != bridgeAddr ||
		!slices.Equal(eg["allowlist"].([]string), []string{"api.allowed.test"}) ||
		!slices.Equal(eg["private_ranges"].([]string), []string{"127.0.0.1/32"}) {
		t.Errorf("egress enforcement %v", eg)
	}
	if sc := enf["seccomp"].(map[string]any); sc["allow_inet"] != true {
		t.Errorf("seccomp %v: the bridge needs inet sockets", sc)
	}
	if !strings.HasPrefix(fmt.Sprint(enf["network"]), "none") || !slices.Contains(enf["namespaces"].([]string), "net") {
		t.Errorf("network %v, namespaces %v", enf["network"], enf["namespaces"])
	}
	// The socket directory keeps no socket once the call is over.
	if left, _ := filepath.Glob(filepath.Join(e.tool.cfg.EgressSocketDir, "*")); len(left) != 0 {
		t.Errorf("sockets left behind: %v", left)
	}
}

// TestTierCStrictEgressRefusals: what the proxy refuses, each recorded.
func TestTierCStrictEgressRefusals(t *testing.T) {
	t.Parallel()
	e := newEgressEnv(t, true)
	// The targets are built at run time, so procinput's argument checks
	// cannot see them: only the proxy stands in the way.
	script := fmt.Sprintf(`code() { curl -s -o /dev/null -w '%%{http_code}\n' --max-time 10 "$@"; }
host=$(printf 'other.%%s' test)
code http://$host:%d/undeclared
code http://private.test:%d/undeclared-private
ip=$(printf '127.0.0.%%s' 1)
code http://$ip:%d/postgres
code -p https://$ip:%d/
code http://api.allowed.test:%d/port
`, e.port, e.port, e.pgPort, e.pgPort, e.port+1)
	res := e.run(t, script, "api.allowed.test")
	o := decode(t, res)
	if o.Stdout != "403\n403\n403\n000\n403\n" {
		t.Errorf("status codes %q (stderr %q)", o.Stdout, o.Stderr)
	}
	conns := connections(t, res)
	if len(conns) != 5 {
		t.Fatalf("%d events, want 5: %v", len(conns), conns)
	}
	expectConnection(t, conns[0], "other.test", e.port, false, "host_not_allowlisted")
	expectConnection(t, conns[1], "private.test", e.port, false, "host_not_allowlisted")
	expectConnection(t, conns[2], "127.0.0.1", e.pgPort, false, "host_not_allowlisted")
	expectConnection(t, conns[3], "127.0.0.1", e.pgPort, false, "host_not_allowlisted")
	expectConnection(t, conns[4], "api.allowed.test", e.port+1, false, "port_not_allowed")
	if conns[3]["method"] != "CONNECT" {
		t.Errorf("curl -p sent %v", conns[3]["method"])
	}
	if res.Resources["egress_refused"] != 5 {
		t.Errorf("resources %v", res.Resources)
	}
	select {
	case h := <-e.hits:
		t.Errorf("a refused request reached the server: %s", h)
	default:
	}
}

// TestTierCStrictEgressPrivateAddress: a declared, allowlisted name that
// resolves to a private address is refused unless EgressPrivateRanges
// covers it.
func TestTierCStrictEgressPrivateAddress(t *testing.T) {
	t.Parallel()
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("ranges_%v", private), func(t *testing.T) {
			t.Parallel()
			e := newEgressEnv(t, private)
			res := e.run(t, fmt.Sprintf("curl -s -w '%%{http_code}\\n' --max-time 10 http://private.test:%d/p\n", e.port), "private.test")
			o := decode(t, res)
			conns := connections(t, res)
			if len(conns) != 1 {
				t.Fatalf("%d events, want 1 (stdout %q)", len(conns), o.Stdout)
			}
			if private {
				if o.Stdout != "hello from /p\n200\n" {
					t.Errorf("stdout %q", o.Stdout)
				}
				expectConnection(t, conns[0], "private.test", e.port, true, "allowed")
				return
			}
			if !strings.HasSuffix(o.Stdout, "403\n") {
				t.Errorf("stdout %q", o.Stdout)
			}
			expectConnection(t, conns[0], "private.test", e.port, false, "private_address")
			if conns[0]["address"] != fmt.Sprintf("127.0.0.1:%d", e.port) {
				t.Errorf("refused address %v", conns[0]["address"])
			}
		})
	}
}

// TestTierCStrictEgressHostUnreachable: with inet sockets allowed for the
// bridge, the program still reaches nothing of the host directly: not its
// loopback (PostgreSQL on 127.0.0.1:5432 included), not its other
// addresses, not PostgreSQL's Unix socket.
func TestTierCStrictEgressHostUnreachable(t *testing.T) {
	t.Parallel()
	e := newEgressEnv(t, true)
	trap, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer trap.Close()
	touched := make(chan string, 4)
	go func() {
		for {
			c, err := trap.Accept()
			if err != nil {
				return
			}
			touched <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	targets := []string{"127.0.0.1/5432", "127.0.0.1/" + strconv.Itoa(e.port)}
	for _, a := range hostAddrs(t) {
		targets = append(targets, a+"/"+strconv.Itoa(trap.Addr().(*net.TCPAddr).Port))
	}
	var script strings.Builder
	for _, tg := range targets {
		fmt.Fprintf(&script, "if timeout 5 bash -c 'echo > /dev/tcp/%s' 2>/dev/null; then echo 'reached %s'; else echo 'refused %s'; fi\n", tg, tg, tg)
	}
	for _, p := range []string{"/var/run/postgresql", "/run/postgresql"} {
		fmt.Fprintf(&script, "if test -e %s; then echo 'visible %s'; else echo 'hidden %s'; fi\n", p, p, p)
	}
	script.WriteString("curl -s --max-time 5 --unix-socket /var/run/postgresql/.s.PGSQL.5432 http://x/ >/dev/null && echo 'pg socket reached' || echo 'pg socket refused'\n")
	script.WriteString("curl -s --max-time 5 --noproxy '*' http://127.0.0.1:5432/ >/dev/null && echo 'pg tcp reached' || echo 'pg tcp refused'\n")
	res := e.run(t, script.String(), "api.allowed.test")
	o := decode(t, res)
	t.Logf("\n%s", o.Stdout)
	if strings.Contains(o.Stdout, "reached") || strings.Contains(o.Stdout, "visible") || strings.Count(o.Stdout, "refused") != len(targets)+2 {
		t.Errorf("the sandbox reached the host:\n%s%s", o.Stdout, o.Stderr)
	}
	if len(res.Events) != 0 {
		t.Errorf("direct attempts went through the proxy: %v", res.Events)
	}
	select {
	case from := <-touched:
		t.Errorf("the trap on the host's addresses accepted a connection from %s", from)
	case <-time.After(100 * time.Millisecond):
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err == nil {
		c.Close()
	} else {
		t.Logf("note: PostgreSQL does not answer on 127.0.0.1:5432 from the host either: %v", err)
	}
}

// hostAddrs returns the host's non-loopback IPv4 addresses.
func hostAddrs(t *testing.T) []string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, n.IP.String())
		}
	}
	if len(out) == 0 {
		t.Log("note: the host has no non-loopback IPv4 address")
	}
	return out
}

// TestTierCOfflineModesStayOffline: none and preflight never get the proxy,
// even for a declared, allowlisted host; tier B refuses strict egress.
func TestTierCOfflineModesStayOffline(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "reached\n") }))
	defer srv.Close()
	url := srv.URL + "/x"
	for _, mode := range []string{procinput.EgressNone, procinput.EgressPreflight} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pol := procinput.Policy{AllowedExecutables: []string{"curl"}, EgressMode: mode, EgressAllowlist: []string{"127.0.0.1"}}
			tool := newTool(t, "C", pol)
			b, _ := json.Marshal(map[string]any{"command": "curl", "args": []string{"-sS", "--max-time", "5", url},
				"requested_egress_hosts": []string{"127.0.0.1"}})
			res := tool.Run(context.Background(), call("run-1", string(b)))
			o := decode(t, res)
			if res.ErrorKind != ledger.KindRuntimeFailure || strings.Contains(o.Stdout, "reached") {
				t.Errorf("%s: %s, stdout %q stderr %q", mode, res.ErrorKind, o.Stdout, o.Stderr)
			}
			if len(res.Events) != 0 || res.Enforcement["seccomp"].(map[string]any)["allow_inet"] != false {
				t.Errorf("%s: events %v, seccomp %v", mode, res.Events, res.Enforcement["seccomp"])
			}
		})
	}
	t.Run("tier_B_strict", func(t *testing.T) {
		t.Parallel()
		pol := procinput.Policy{AllowedExecutables: []string{"curl"}, EgressMode: procinput.EgressStrict, EgressAllowlist: []string{"127.0.0.1"}}
		tool := newTool(t, "B", pol)
		b, _ := json.Marshal(map[string]any{"command": "curl", "args": []string{url}, "requested_egress_hosts": []string{"127.0.0.1"}})
		if res := tool.Run(context.Background(), call("run-1", string(b))); res.ErrorKind != ledger.KindEgressDenied {
			t.Errorf("tier B strict: %q (%s), want egress_denied", res.ErrorKind, res.Error)
		}
	})
}

// TestTierCStrictEgressCwdAndInit: under the init the program still starts
// in its cwd, with the proxy variables, and only stdio reaches it.
func TestTierCStrictEgressCwdAndInit(t *testing.T) {
	t.Parallel()
	e := newEgressEnv(t, true)
	ws := prepare(t, e.tool, "run-1")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "script.sh"), []byte("pwd; env | grep -i _proxy= | sort; ls -l /proc/$$/fd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"command": "sh", "args": []string{"script.sh"}, "cwd": "sub", "requested_egress_hosts": []string{"api.allowed.test"}})
	res := e.tool.Run(context.Background(), call("run-1", string(b)))
	o := decode(t, res)
	want := "/workspace/sub\nALL_PROXY=http://127.0.0.1:3128\nHTTPS_PROXY=http://127.0.0.1:3128\nHTTP_PROXY=http://127.0.0.1:3128\n" +
		"NO_PROXY=\nall_proxy=http://127.0.0.1:3128\nhttp_proxy=http://127.0.0.1:3128\nhttps_proxy=http://127.0.0.1:3128\nno_proxy=\n"
	if res.ErrorKind != "" || !strings.HasPrefix(o.Stdout, want) {
		t.Fatalf("%s %s: stdout %q, want it to start %q (stderr %q)", res.ErrorKind, res.Error, o.Stdout, want, o.Stderr)
	}
	// sh's descriptors: stdin, the output pipe, and the script it reads;
	// nothing of the init's (spec, usage report, bridge, its executable).
	for _, line := range strings.Split(strings.TrimPrefix(o.Stdout, want), "\n") {
		head, target, ok := strings.Cut(line, " -> ")
		if !ok {
			continue
		}
		f := strings.Fields(head)
		fd := f[len(f)-1]
		switch {
		case fd == "0" && target == "/dev/null", (fd == "1" || fd == "2") && strings.HasPrefix(target, "pipe:"),
			target == "/workspace/sub/script.sh":
		default:
			t.Errorf("the program holds descriptor %s -> %s", fd, target)
		}
	}
	if _, ok := res.Resources["descendants_killed"]; !ok {
		t.Errorf("no usage report from the init: %v", res.Resources)
	}
}

// TestTierCEgressEventCap: past maxEgressEvents connections are counted,
// not recorded.
func TestTierCEgressEventCap(t *testing.T) {
	t.Parallel()
	eg := &egressSession{red: func(s string) string { return s }}
	var got int
	eg.record = func(executor.Event) { got++ }
	for range maxEgressEvents + 7 {
		eg.onConnection(egressConn())
	}
	res := map[string]int64{}
	eg.finish(res)
	if _, err := (&sandboxInit{}).finish(); err == nil {
		t.Error("finish without an init reported usage")
	}
	if got != maxEgressEvents || res["egress_events_dropped"] != 7 || res["egress_connections"] != maxEgressEvents+7 {
		t.Errorf("recorded %d, resources %v", got, res)
	}
}

func egressConn() (c egress.Connection) {
	c.Host, c.Port, c.Reason, c.End = "x.test", 443, "host_not_allowlisted", "refused"
	c.Started = time.Now()
	c.Ended = c.Started
	return c
}

// TestTierCEgressEventsInLedger runs a strict-egress call through a real
// executor and PostgreSQL: its egress.connection events are on the
// request's stream, in order, just before execution.completed.
func TestTierCEgressEventsInLedger(t *testing.T) {
	t.Parallel()
	e := newEgressEnv(t, true)
	db := testdb.New(t)
	sub := db.LoginRole(t, "alice", "ledger_submitter")
	aud := db.LoginRole(t, "", "ledger_auditor")
	pol, err := policy.FromSources([]policy.Source{{Name: "egress.cedar",
		Text: []byte(`permit (principal == Principal::"alice", action == Action::"tool.execute", resource == Tool::"process.run");`)}})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := executor.New(db.Pool, executor.Config{Label: "tierc-egress", Workers: 2, Lease: 10 * time.Second,
		PollInterval: 100 * time.Millisecond, RescueInterval: time.Second, ShutdownGrace: 5 * time.Second,
		ToolTimeout: time.Minute}, pol, attest.NewSigner(priv), slog.New(slog.DiscardHandler), e.tool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("executor: %v", err)
		}
	}()
	ws := prepare(t, e.tool, "ledger-run")
	script := fmt.Sprintf("curl -sS --max-time 10 http://api.allowed.test:%d/one\ncurl -s -o /dev/null --max-time 10 http://private.test:%d/two\n", e.port, e.port)
	if err := os.WriteFile(filepath.Join(ws, "script.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var id string
	err = sub.Pool.QueryRow(ctx, `SELECT ledger.submit('process.run', $1::jsonb, 'ledger-run')::text`,
		`{"command":"sh","args":["script.sh"],"requested_egress_hosts":["api.allowed.test"]}`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for state := ""; state != "succeeded"; {
		if err := sub.Pool.QueryRow(ctx, `SELECT state FROM ledger.requests WHERE id = $1`, id).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == "failed" || state == "denied" || time.Now().After(deadline) {
			t.Fatalf("request %s is %s", id, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rows, err := aud.Pool.Query(ctx, `SELECT type, payload::text FROM ledger.events WHERE stream = $1 ORDER BY version`, "request:"+id)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var conns []map[string]any
	for rows.Next() {
		var typ, payload string
		if err := rows.Scan(&typ, &payload); err != nil {
			t.Fatal(err)
		}
		types = append(types, typ)
		if typ == "egress.connection" {
			var p map[string]any
			if err := json.Unmarshal([]byte(payload), &p); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, p)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(types, " ")
	if !strings.Contains(got, "request.decided egress.connection egress.connection execution.completed") {
		t.Fatalf("stream %s", got)
	}
	expectConnection(t, conns[0], "api.allowed.test", e.port, true, "allowed")
	expectConnection(t, conns[1], "private.test", e.port, false, "host_not_allowlisted")
}
