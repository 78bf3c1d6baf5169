package processrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/ledger"
)

// TestMain makes the test binary the sandbox init of both tiers, or the
// executor a crash test kills.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == procinit.Hidden {
		os.Exit(procinit.Main())
	}
	if os.Getenv(crashEnv) != "" {
		os.Exit(crashExecutor())
	}
	os.Exit(m.Run())
}

var tiers = []string{"B", "C"}

// newTool returns a tool of tier whose workspace root the sandbox uid can
// traverse.
func newTool(t *testing.T, tier string, pol procinput.Policy, mod ...func(*Config)) *Tool {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// t.TempDir's directories are 0700: the sandbox uid must traverse them.
	for d := root; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if pol.EgressMode == "" {
		pol.EgressMode = procinput.EgressNone
	}
	cfg := Config{Tier: tier, Self: self, WorkspaceRoot: filepath.Join(root, "ws"), Policy: pol}
	for _, m := range mod {
		m(&cfg)
	}
	tool, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func call(runID string, input string) executor.Call {
	return executor.Call{RequestID: uuid.New(), Attempt: 1, Principal: "alice", RunID: runID, Input: json.RawMessage(input)}
}

func input(t *testing.T, command string, args ...string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"command": command, "args": args})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decode(t *testing.T, res executor.Result) runOutput {
	t.Helper()
	if !json.Valid(res.Output) || !utf8.Valid(res.Output) {
		t.Fatalf("output is not valid UTF-8 JSON: %q", res.Output)
	}
	var o runOutput
	if err := json.Unmarshal(res.Output, &o); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	return o
}

// prepare creates run's workspace as Run does, for files a test plants.
func prepare(t *testing.T, tool *Tool, runID string) string {
	t.Helper()
	ws, err := tool.workspace(call(runID, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func workspaceOf(tool *Tool, runID string) string {
	return filepath.Join(tool.cfg.WorkspaceRoot, "alice", runID)
}

// survivors lists the processes one of whose arguments is marker: a whole
// argument, so that a process of the machine's own whose command line merely
// contains the marker's digits (a CI runner's script, say) is not counted.
// A marker of several arguments is given NUL-separated ("sleep\x00" + m);
// its first may also end a path (argv[0] "/usr/bin/sleep", as bwrap runs it).
func survivors(marker string) []string {
	var out []string
	want, path := []byte("\x00"+marker+"\x00"), []byte("/"+marker+"\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if b = append([]byte{0}, b...); err == nil && (bytes.Contains(b, want) || bytes.Contains(b, path)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// waitLong bounds the waits for what the tests expect to happen: long
// enough for a machine busy with other work, short of the go test timeout.
const waitLong = 2 * time.Minute

func waitNoSurvivors(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		s := survivors(marker)
		if len(s) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survived the call: %v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func eachTier(t *testing.T, f func(t *testing.T, tier string)) {
	for _, tier := range tiers {
		t.Run("tier_"+tier, func(t *testing.T) {
			t.Parallel()
			f(t, tier)
		})
	}
}

func TestToolIdentity(t *testing.T) {
	b := newTool(t, "B", procinput.Policy{})
	c := newTool(t, "C", procinput.Policy{})
	if b.Name() != "process.run" || b.Executor() != "sandbox_tier_b" || b.Tier() != "B" || b.SafeToRepeat() {
		t.Errorf("tier B identity: %s %s %s %v", b.Name(), b.Executor(), b.Tier(), b.SafeToRepeat())
	}
	if c.Executor() != "sandbox_tier_c_linux_bubblewrap" || c.Tier() != "C" {
		t.Errorf("tier C identity: %s %s", c.Executor(), c.Tier())
	}
	if _, err := b.Prepare(context.Background(), call("run-1", `{"command":"echo","bogus":1}`)); err == nil {
		t.Error("Prepare accepted an unknown field")
	}
	if _, err := New(Config{Tier: "B", WorkspaceRoot: "/tmp/x"}); err == nil {
		t.Error("New accepted tier B without Self")
	}
	if _, err := New(Config{Tier: "C", WorkspaceRoot: "/tmp/x"}); err == nil {
		t.Error("New accepted tier C without Self, which runs its sandbox init")
	}
	if _, err := New(Config{Tier: "D", WorkspaceRoot: "/tmp/x"}); err == nil {
		t.Error("New accepted tier D")
	}
}

func TestEcho(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"echo"}})
		res := tool.Run(context.Background(), call("run-1", input(t, "echo", "hello")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s (%s)", res.ErrorKind, res.Error, res.Output)
		}
		o := decode(t, res)
		if o.Stdout != "hello\n" || o.Stderr != "" || o.ExitCode != 0 || o.Tier != tier || o.SandboxBackend == "" {
			t.Errorf("output %+v", o)
		}
		if res.ExitStatus == nil || *res.ExitStatus != 0 {
			t.Errorf("exit status %v", res.ExitStatus)
		}
		for _, k := range []string{"wall_ms", "cpu_user_ms", "cpu_sys_ms", "max_rss_kb"} {
			if _, ok := res.Resources[k]; !ok {
				t.Errorf("resources lack %s: %v", k, res.Resources)
			}
		}
		if res.Enforcement["seccomp"] == nil {
			t.Errorf("enforcement lacks seccomp: %v", res.Enforcement)
		}
		if _, err := json.Marshal(res.Enforcement); err != nil {
			t.Errorf("enforcement does not marshal: %v", err)
		}
		var raw map[string]any
		_ = json.Unmarshal(res.Output, &raw)
		for _, k := range []string{"exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "duration_ms", "tier", "sandbox_backend"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("output lacks %s: %s", k, res.Output)
			}
		}
	})
}

func TestNonZeroExit(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"ls"}})
		res := tool.Run(context.Background(), call("run-1", input(t, "ls", "no-such-file")))
		if res.ErrorKind != ledger.KindRuntimeFailure {
			t.Fatalf("error kind %q (%s), want runtime_failure", res.ErrorKind, res.Error)
		}
		o := decode(t, res)
		if o.ExitCode != 2 || res.ExitStatus == nil || *res.ExitStatus != 2 || !strings.Contains(o.Stderr, "no-such-file") {
			t.Errorf("output %+v, exit status %v", o, res.ExitStatus)
		}
	})
}

func TestOutputQuotaKeepsPartialOutput(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"yes"}}, func(c *Config) { c.OutputLimit = 10000 })
		// yes never ends by itself: only the output limit (or, if that
		// fails, this hang bound) stops it.
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		res := tool.Run(ctx, call("run-1", input(t, "yes", "quota-marker-"+tier)))
		if res.ErrorKind != ledger.KindQuotaExceeded {
			t.Fatalf("error kind %q (%s), want quota_exceeded", res.ErrorKind, res.Error)
		}
		o := decode(t, res)
		if len(o.Stdout)+len(o.Stderr) != 10000 || !o.StdoutTruncated {
			t.Errorf("kept %d+%d bytes, truncated %v", len(o.Stdout), len(o.Stderr), o.StdoutTruncated)
		}
		if !strings.HasPrefix(o.Stdout, "quota-marker-"+tier+"\nquota-marker-") {
			t.Errorf("stdout starts %q", o.Stdout[:min(40, len(o.Stdout))])
		}
		waitNoSurvivors(t, "quota-marker-"+tier)
	})
}

// TestTimeoutKillsTree: a call past its context's deadline is stopped,
// its process tree with it. The sleep would last close to three hours:
// nothing but the kill can end the call, however busy the machine, and
// waitLong only bounds a call that is never stopped.
func TestTimeoutKillsTree(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"sleep"}})
		marker := "9876." + map[string]string{"B": "61", "C": "62"}[tier]
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		c := call("run-1", input(t, "sleep", marker))
		done := make(chan executor.Result, 1)
		go func() { done <- tool.Run(ctx, c) }()
		var res executor.Result
		select {
		case res = <-done:
		case <-time.After(waitLong):
			t.Fatalf("the call was still running %s after its 300 ms deadline", waitLong)
		}
		if res.ErrorKind != ledger.KindTimedOut || !res.TimedOut {
			t.Fatalf("error kind %q timed out %v (%s)", res.ErrorKind, res.TimedOut, res.Error)
		}
		waitNoSurvivors(t, marker)
	})
}

func TestCancelIsCancelled(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"sleep"}})
		marker := "8.76" + map[string]string{"B": "51", "C": "52"}[tier]
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		res := tool.Run(ctx, call("run-1", input(t, "sleep", marker)))
		if res.ErrorKind != ledger.KindCancelled || res.TimedOut {
			t.Fatalf("error kind %q timed out %v (%s)", res.ErrorKind, res.TimedOut, res.Error)
		}
		waitNoSurvivors(t, marker)
	})
}

func TestDaemonEscapeLeavesNoSurvivor(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true})
		marker := "301.2" + map[string]string{"B": "31", "C": "32"}[tier]
		ws := prepare(t, tool, "run-1")
		script := "(setsid sleep " + marker + " >/dev/null 2>&1 &)\necho started\n"
		if err := os.WriteFile(filepath.Join(ws, "escape.sh"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		res := tool.Run(context.Background(), call("run-1", input(t, "sh", "escape.sh")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s (%s)", res.ErrorKind, res.Error, res.Output)
		}
		if o := decode(t, res); o.Stdout != "started\n" {
			t.Errorf("output %+v", o)
		}
		// Tier B's init reports the escaped daemon it killed.
		if tier == "B" && res.Resources["descendants_killed"] < 1 {
			t.Errorf("descendants_killed %d, want the escaped sleep", res.Resources["descendants_killed"])
		}
		waitNoSurvivors(t, marker)
	})
}

func TestBinaryOutputStoredAsValidJSON(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"cat"}})
		ws := prepare(t, tool, "run-1")
		data := []byte("a\xff\xfeb\x00c\x01\x1b[31m\"<>&\\")
		if err := os.WriteFile(filepath.Join(ws, "bin.dat"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		res := tool.Run(context.Background(), call("run-1", input(t, "cat", "bin.dat")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s", res.ErrorKind, res.Error)
		}
		o := decode(t, res)
		if want := "a\uFFFDb\uFFFDc\x01\x1b[31m\"<>&\\"; o.Stdout != want || !o.StdoutLossy {
			t.Errorf("stdout %q lossy %v, want %q", o.Stdout, o.StdoutLossy, want)
		}
		if bytes.ContainsAny(res.Output, "\x00\x01\x1b") {
			t.Errorf("raw control bytes in stored JSON: %q", res.Output)
		}
	})
}

func TestEnvironmentIsClean(t *testing.T) {
	t.Setenv("EXECLEDGER_TEST_SECRET", "hunter2-s3cr3t-value")
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"env"}})
		res := tool.Run(context.Background(), call("run-1", input(t, "env")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s", res.ErrorKind, res.Error)
		}
		o := decode(t, res)
		if strings.Contains(o.Stdout, "EXECLEDGER_TEST_SECRET") || strings.Contains(o.Stdout, "hunter2") {
			t.Errorf("daemon environment leaked: %q", o.Stdout)
		}
		if !strings.Contains(o.Stdout, "PATH=") || !strings.Contains(o.Stdout, "LC_ALL=C") {
			t.Errorf("env %q lacks PATH or LC_ALL", o.Stdout)
		}
	})
}

func TestRedactsOutput(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"echo"}})
		if err := tool.cfg.Redactor.AddSecret("sup3r-s3cret-t0ken"); err != nil {
			t.Fatal(err)
		}
		res := tool.Run(context.Background(), call("run-1", input(t, "echo", "key is sup3r-s3cret-t0ken")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s", res.ErrorKind, res.Error)
		}
		if bytes.Contains(res.Output, []byte("sup3r-s3cret-t0ken")) || !bytes.Contains(res.Output, []byte("<redacted>")) {
			t.Errorf("output not redacted: %s", res.Output)
		}
	})
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		name  string
		pol   procinput.Policy
		input string
		kind  ledger.ErrorKind
	}{
		{"interpreter", procinput.Policy{AllowedExecutables: []string{"*"}}, `{"command":"sh","args":["x.sh"]}`, ledger.KindCapabilityDenied},
		{"not allowlisted", procinput.Policy{AllowedExecutables: []string{"echo"}}, `{"command":"ls"}`, ledger.KindCapabilityDenied},
		{"outside workspace", procinput.Policy{AllowedExecutables: []string{"cat"}}, `{"command":"cat","args":["/etc/passwd"]}`, ledger.KindWorkspaceScopeDenied},
		{"dot dot", procinput.Policy{AllowedExecutables: []string{"cat"}}, `{"command":"cat","args":["../other/x"]}`, ""},
		{"malformed", procinput.Policy{AllowedExecutables: []string{"cat"}}, `{"command":"cat","nope":1}`, ledger.KindInvalidInput},
		{"background", procinput.Policy{AllowedExecutables: []string{"sleep"}}, `{"command":"sleep","args":["1"],"background":true}`, ledger.KindCapabilityDenied},
	}
	for _, tier := range tiers {
		for _, c := range cases {
			t.Run(tier+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				tool := newTool(t, tier, c.pol)
				res := tool.Run(context.Background(), call("run-1", c.input))
				if c.kind == "" {
					if res.ErrorKind != ledger.KindWorkspaceScopeDenied && res.ErrorKind != ledger.KindInvalidInput {
						t.Fatalf("error kind %q (%s)", res.ErrorKind, res.Error)
					}
				} else if res.ErrorKind != c.kind {
					t.Fatalf("error kind %q (%s), want %s", res.ErrorKind, res.Error, c.kind)
				}
			})
		}
	}
	t.Run("bad run id", func(t *testing.T) {
		tool := newTool(t, "B", procinput.Policy{AllowedExecutables: []string{"echo"}})
		for _, id := range []string{"..", "a/b", "_req-x"} {
			if res := tool.Run(context.Background(), call(id, `{"command":"echo"}`)); res.ErrorKind != ledger.KindInvalidInput {
				t.Errorf("run id %q: %q", id, res.ErrorKind)
			}
		}
	})
}

func TestStrictEgress(t *testing.T) {
	pol := procinput.Policy{AllowedExecutables: []string{"echo"}, EgressMode: procinput.EgressStrict}
	t.Run("tier_B fails closed", func(t *testing.T) {
		t.Parallel()
		tool := newTool(t, "B", pol)
		res := tool.Run(context.Background(), call("run-1", input(t, "echo", "hi")))
		if res.ErrorKind != ledger.KindEgressDenied {
			t.Fatalf("error kind %q (%s), want egress_denied", res.ErrorKind, res.Error)
		}
	})
	t.Run("tier_C runs offline", func(t *testing.T) {
		t.Parallel()
		tool := newTool(t, "C", pol)
		res := tool.Run(context.Background(), call("run-1", input(t, "echo", "hi")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s", res.ErrorKind, res.Error)
		}
		if net, _ := res.Enforcement["network"].(string); !strings.HasPrefix(net, "none") {
			t.Errorf("network %v", res.Enforcement["network"])
		}
		res = tool.Run(context.Background(), call("run-1",
			`{"command":"echo","args":["hi"],"requested_egress_hosts":["example.com"]}`))
		if res.ErrorKind != ledger.KindEgressDenied {
			t.Fatalf("declared host: error kind %q (%s), want egress_denied", res.ErrorKind, res.Error)
		}
	})
}

func TestRunsHaveSeparateWorkspaces(t *testing.T) {
	eachTier(t, func(t *testing.T, tier string) {
		tool := newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"touch", "ls", "cat"}})
		ctx := context.Background()
		if res := tool.Run(ctx, call("run-a", input(t, "touch", "mine.txt"))); res.ErrorKind != "" {
			t.Fatalf("touch: %s: %s (%s)", res.ErrorKind, res.Error, res.Output)
		}
		a, b := workspaceOf(tool, "run-a"), workspaceOf(tool, "run-b")
		if _, err := os.Stat(filepath.Join(a, "mine.txt")); err != nil {
			t.Fatalf("run-a's file: %v", err)
		}
		res := tool.Run(ctx, call("run-b", input(t, "ls", "-a")))
		if res.ErrorKind != "" {
			t.Fatalf("ls: %s: %s", res.ErrorKind, res.Error)
		}
		if o := decode(t, res); strings.Contains(o.Stdout, "mine.txt") {
			t.Errorf("run-b sees run-a's file: %q", o.Stdout)
		}
		if _, err := os.Stat(filepath.Join(b, "mine.txt")); err == nil {
			t.Error("run-a's file is in run-b's workspace")
		}
		res = tool.Run(ctx, call("run-b", input(t, "cat", filepath.Join(a, "mine.txt"))))
		if res.ErrorKind != ledger.KindWorkspaceScopeDenied {
			t.Errorf("cat of run-a's file from run-b: %q (%s)", res.ErrorKind, res.Error)
		}
		// A request without a run gets a workspace of its own.
		c := call("", input(t, "ls", "-a"))
		if res := tool.Run(ctx, c); res.ErrorKind != "" {
			t.Fatalf("no run: %s: %s", res.ErrorKind, res.Error)
		}
		if _, err := os.Stat(workspaceOf(tool, "_req-"+c.RequestID.String())); err != nil {
			t.Errorf("request workspace: %v", err)
		}
	})
}

// TestTierCNeverReachesHostLoopback: whatever the egress mode, a tier C
// process cannot connect to a service on the host's loopback (the host's
// PostgreSQL listens there too).
func TestTierCNeverReachesHostLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, mode := range []string{procinput.EgressNone, procinput.EgressPreflight} {
		tool := newTool(t, "C", procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true, EgressMode: mode})
		ws := prepare(t, tool, "run-net")
		script := fmt.Sprintf("if echo hi > /dev/tcp/127.0.0.1/%d; then echo connected; else echo refused; fi\n", port)
		if err := os.WriteFile(filepath.Join(ws, "net.sh"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		res := tool.Run(context.Background(), call("run-net", input(t, "bash", "net.sh")))
		if o := decode(t, res); o.Stdout != "refused\n" {
			t.Errorf("egress %s: stdout %q (%s: %s)", mode, o.Stdout, res.ErrorKind, res.Error)
		}
	}
	select {
	case <-accepted:
		t.Fatal("a tier C process connected to the host's loopback")
	case <-time.After(100 * time.Millisecond):
	}
}
