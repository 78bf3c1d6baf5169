package processrun

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/redact"
	"github.com/execledger/execledger/internal/sandbox/jobobject"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/sandbox/sandboxexec"
	"github.com/execledger/execledger/ledger"
)

// These tests cover what macOS's and Windows's process.run decide (native.go),
// which is pure and so runs here.

func TestNativeCheckConfigFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		be         nativeBackend
		tier, mode string
		ttl        time.Duration
		want       string // "" = accepted
	}{
		{seatbeltBackend, "C", procinput.EgressNone, 0, ""},
		{seatbeltBackend, "C", procinput.EgressStrict, 0, ""}, // offline runs are enforced
		{seatbeltBackend, "B", procinput.EgressNone, 0, "tier B needs Linux"},
		{seatbeltBackend, "C", procinput.EgressNone, time.Hour, "workspace_ttl"},
		{jobObjectBackend, "C", procinput.EgressPreflight, 0, ""},
		{jobObjectBackend, "C", procinput.EgressStrict, 0, "does not isolate the network"},
		{jobObjectBackend, "B", procinput.EgressNone, 0, "tier B needs Linux"},
	} {
		err := tc.be.checkConfig(tc.tier, tc.mode, tc.ttl)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s tier %s %s ttl %s: %v, want accepted", tc.be.backend, tc.tier, tc.mode, tc.ttl, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s tier %s %s ttl %s: %v, want an error about %q", tc.be.backend, tc.tier, tc.mode, tc.ttl, err, tc.want)
		}
	}
}

func TestNativeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		be   nativeBackend
		plan procinput.Plan
		kind ledger.ErrorKind // "" = runs
	}{
		{"macos offline", seatbeltBackend, procinput.Plan{EgressMode: procinput.EgressNone}, ""},
		{"macos strict offline", seatbeltBackend, procinput.Plan{EgressMode: procinput.EgressStrict}, ""},
		{"macos strict hosts", seatbeltBackend, procinput.Plan{EgressMode: procinput.EgressStrict, EgressHosts: []string{"example.com"}}, ledger.KindEgressDenied},
		{"macos background", seatbeltBackend, procinput.Plan{EgressMode: procinput.EgressNone, Background: procinput.BackgroundRunOwned}, ledger.KindCapabilityDenied},
		{"windows preflight", jobObjectBackend, procinput.Plan{EgressMode: procinput.EgressPreflight, EgressHosts: []string{"example.com"}}, ""},
		{"windows strict offline", jobObjectBackend, procinput.Plan{EgressMode: procinput.EgressStrict}, ledger.KindEgressDenied},
		{"windows background", jobObjectBackend, procinput.Plan{EgressMode: procinput.EgressNone, Background: procinput.BackgroundDetached}, ledger.KindCapabilityDenied},
	} {
		r := tc.be.refuse(&tc.plan)
		switch {
		case tc.kind == "" && r != nil:
			t.Errorf("%s: refused %+v, want it run", tc.name, r)
		case tc.kind != "" && (r == nil || r.Kind != tc.kind || r.Reason == ""):
			t.Errorf("%s: %+v, want a %s refusal with a reason", tc.name, r, tc.kind)
		}
	}
}

// checkedPlan is a plan as procinput.Check makes it.
func checkedPlan() *procinput.Plan {
	return &procinput.Plan{Command: "git", Args: []string{"status", "--short"}, Root: "/Users/ci/ws/alice/run-1",
		Dir: "/Users/ci/ws/alice/run-1/src", Env: []string{"PATH=/usr/bin:/bin", "LANG=C", "HOME=/Users/ci/ws/alice/run-1"},
		EgressMode: procinput.EgressNone, Timeout: 3 * time.Second}
}

func TestSeatbeltPlanFromCall(t *testing.T) {
	sp := seatbeltPlan(checkedPlan(), "/usr/bin/git")
	profile, err := sp.Profile()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(deny default)",
		`(subpath "/Users/ci/ws/alice/run-1"))`, // the workspace, read-write
		`(literal "/usr/bin/git")`,
		"Network: none",
	} {
		if !strings.Contains(profile, want) {
			t.Errorf("profile lacks %q:\n%s", want, profile)
		}
	}
	if strings.Contains(profile, "process-fork") || strings.Contains(profile, "network-outbound") {
		t.Errorf("profile allows fork or network:\n%s", profile)
	}
	argv, err := sp.Argv()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv[3:], " "); got != "-- /usr/bin/git status --short" {
		t.Errorf("argv tail = %q", got)
	}
	enf := sp.Enforcement()
	if enf["backend"] != sandboxexec.Backend || enf["workdir"] != "/Users/ci/ws/alice/run-1/src" || enf["not_enforced"] == nil {
		t.Errorf("enforcement = %v", enf)
	}
}

func TestJobPlanFromCall(t *testing.T) {
	plan := checkedPlan()
	plan.Root, plan.Dir = `C:\ws\alice\run-1`, `C:\ws\alice\run-1\src`
	jp := jobPlan(plan, `C:\Program Files\Git\cmd\git.exe`, procinit.Limits{CPUSeconds: 2, AddressSpace: 256 << 20, Processes: 16, OpenFiles: 256})
	c, err := jp.Job()
	if err != nil {
		t.Fatal(err)
	}
	if c.ActiveProcessLimit != 16 || c.ProcessMemoryLimit != 256<<20 || c.PerProcessUserTimeLimit != 2e7 {
		t.Errorf("job config = %+v, want 16 processes, 256 MiB per process, 2 s user time", c)
	}
	if jp.Timeout != 3*time.Second || jp.Dir != plan.Dir {
		t.Errorf("plan = %+v", jp)
	}
	line, err := jp.CommandLine()
	if err != nil || line != `"C:\Program Files\Git\cmd\git.exe" status --short` {
		t.Errorf("command line = %q, %v", line, err)
	}
	enf := jp.Enforcement()
	if enf["backend"] != jobobject.Backend || enf["network"] != "not isolated" || enf["filesystem"] != "not isolated" {
		t.Errorf("enforcement = %v", enf)
	}
	// Limits past what the Windows structures hold saturate, never wrap
	// to a smaller limit.
	big := jobPlan(plan, `C:\x\git.exe`, procinit.Limits{Processes: math.MaxUint64, CPUSeconds: math.MaxUint64})
	if big.Limits.ActiveProcesses != math.MaxUint32 || big.Limits.ProcessUserTime <= 0 {
		t.Errorf("saturated limits = %+v", big.Limits)
	}
}

func TestLookPathIn(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Join(a, "tool"), 0o644}, {filepath.Join(b, "tool"), 0o755}, {filepath.Join(b, "win.exe"), 0o644}} {
		if err := os.WriteFile(f.path, nil, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(a, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	exec := func(m os.FileMode) bool { return m.Perm()&0o111 != 0 }
	if got, err := lookPathIn("tool", "relative:"+a+":"+b, ':', []string{""}, exec); err != nil || got != filepath.Join(b, "tool") {
		t.Errorf("tool = %q, %v; want the executable one in %s", got, err, b)
	}
	if _, err := lookPathIn("dir", a, ':', []string{""}, func(os.FileMode) bool { return true }); err == nil {
		t.Error("a directory was found as a program")
	}
	if got, err := lookPathIn("win", a+";"+b, ';', []string{".exe", ".com"}, func(os.FileMode) bool { return true }); err != nil || got != filepath.Join(b, "win.exe") {
		t.Errorf("win = %q, %v", got, err)
	}
}

func TestBudgetAndNativeResult(t *testing.T) {
	red := redact.New(redact.Options{})
	out := newBudget(8)
	if n, err := out.writer(0).Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if out.overflowed() {
		t.Fatal("overflow within the budget")
	}
	if n, err := out.writer(1).Write([]byte("err\x00or")); n != 6 || err != nil {
		t.Fatalf("write past the budget = %d, %v; want all taken", n, err)
	}
	if !out.overflowed() {
		t.Fatal("no overflow past the budget")
	}
	res := nativeResult(seatbeltBackend, red, 8, out, nativeEnd{code: 137, wall: time.Second}, map[string]any{"backend": "x"})
	if res.ErrorKind != ledger.KindQuotaExceeded || res.Resources["output_bytes"] != 8 || *res.ExitStatus != 137 {
		t.Errorf("result = %+v", res)
	}
	var o runOutput
	if err := json.Unmarshal(res.Output, &o); err != nil {
		t.Fatal(err)
	}
	if o.Stdout != "hello" || o.Stderr != "err" || !o.StderrTruncated || o.StdoutTruncated || o.LimitExceeded != limitOutput ||
		o.Tier != "C" || o.SandboxBackend != sandboxexec.Backend {
		t.Errorf("output = %+v", o)
	}
	for _, tc := range []struct {
		end  nativeEnd
		kind ledger.ErrorKind
	}{
		{nativeEnd{code: 0}, ""},
		{nativeEnd{code: 3}, ledger.KindRuntimeFailure},
		{nativeEnd{code: jobobject.KilledExitCode, timedOut: true}, ledger.KindTimedOut},
		{nativeEnd{code: 137, cancelled: true, cause: errors.New("shutdown")}, ledger.KindCancelled},
	} {
		r := nativeResult(jobObjectBackend, red, 8, newBudget(8), tc.end, nil)
		if r.ErrorKind != tc.kind || r.TimedOut != (tc.kind == ledger.KindTimedOut) {
			t.Errorf("%+v: kind %q timed out %v, want %q", tc.end, r.ErrorKind, r.TimedOut, tc.kind)
		}
	}
}

func TestNotStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if r := notStarted(ctx, false, errors.New("no sandbox-exec"), nil); r.ErrorKind != ledger.KindSpawnFailed {
		t.Errorf("spawn failure = %+v", r)
	}
	if r := notStarted(ctx, true, errors.New("deadline"), nil); r.ErrorKind != ledger.KindTimedOut || !r.TimedOut {
		t.Errorf("timeout = %+v", r)
	}
	cancel()
	if r := notStarted(ctx, false, ctx.Err(), nil); r.ErrorKind != ledger.KindCancelled {
		t.Errorf("cancelled = %+v", r)
	}
}
