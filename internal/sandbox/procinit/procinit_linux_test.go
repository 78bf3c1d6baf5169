package procinit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestMain makes the test binary the init: Command re-executes it with
// Hidden as its first argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Hidden {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

type result struct {
	code           int
	stdout, stderr string
	usage          Usage
}

// start starts the init of spec with usage reporting and returns functions
// that wait for it and signal it.
func start(t *testing.T, spec Spec) (wait func() result, signal func(os.Signal)) {
	t.Helper()
	return startWith(t, spec, nil)
}

// startWith is start with specFile, when not nil, as the init's spec
// instead of spec's.
func startWith(t *testing.T, spec Spec, specFile *os.File) (wait func() result, signal func(os.Signal)) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := Command(self, spec)
	if err != nil {
		t.Fatal(err)
	}
	if specFile != nil {
		cmd.ExtraFiles[0].Close()
		cmd.ExtraFiles[0] = specFile
	}
	readUsage, err := WithUsage(cmd)
	if err != nil {
		t.Fatal(err)
	}
	// A descriptor the launcher leaks into the init must not reach the
	// target either.
	leak, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	cmd.ExtraFiles = append(cmd.ExtraFiles, leak)
	// The race runtime sleeps 1 s before a successful exit by default.
	cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles[0].Close()
	wait = func() result {
		t.Helper()
		_ = cmd.Wait()
		u, err := readUsage()
		if err != nil {
			t.Fatalf("usage: %v (stderr %q)", err, stderr.String())
		}
		r := result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), usage: u}
		if r.code != u.ExitCode {
			t.Errorf("init exit %d, usage reports %d", r.code, u.ExitCode)
		}
		return r
	}
	signal = func(s os.Signal) {
		if err := cmd.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
	}
	return wait, signal
}

func runInit(t *testing.T, spec Spec) result {
	t.Helper()
	wait, _ := start(t, spec)
	return wait()
}

func sh(script string) Spec { return Spec{Path: "/bin/sh", Args: []string{"-c", script}} }

// marker returns a sleep duration no other process uses, to find a test's
// processes in /proc.
func marker() string { return fmt.Sprint(1_000_000 + rand.IntN(8_000_000)) }

// running lists the pids whose command line contains "sleep" and m.
func running(m string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if slices.Contains(args, m) && strings.HasSuffix(args[0], "sleep") {
			pids = append(pids, d)
		}
	}
	return pids
}

// waitLong bounds the waits for what the tests expect to happen: long
// enough for a machine busy with other work, short of the go test timeout.
const waitLong = 2 * time.Minute

// gone waits (up to waitLong) for every process with marker m to end.
func gone(t *testing.T, m string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for len(running(m)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes with marker %s survive: %v", m, running(m))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       Spec
		code, sig  int
		wantStdout string
	}{
		{"zero", sh("echo hi"), 0, 0, "hi\n"},
		{"code", sh("exit 7"), 7, 0, ""},
		{"signal", sh("kill -KILL $$"), 128 + 9, 9, ""},
		{"not found", Spec{Path: "/nonexistent/prog"}, ExitNotFound, 0, ""},
		{"args and env", Spec{Path: "/bin/sh", Args: []string{"-c", `echo "$1 $FOO"`, "sh", "a b"}, Env: []string{"FOO=bar"}}, 0, 0, "a b bar\n"},
		{"dir", Spec{Path: "/bin/pwd", Dir: "/usr"}, 0, 0, "/usr\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runInit(t, tt.spec)
			if r.code != tt.code || r.usage.Signal != tt.sig || r.stdout != tt.wantStdout {
				t.Errorf("got exit %d signal %d stdout %q (stderr %q), want %d %d %q",
					r.code, r.usage.Signal, r.stdout, r.stderr, tt.code, tt.sig, tt.wantStdout)
			}
		})
	}
}

func TestInvalidSpec(t *testing.T) {
	t.Parallel()
	if _, err := Command("/bin/true", Spec{Path: "sh"}); err == nil {
		t.Error("relative path accepted")
	}
	if _, err := Command("/bin/true", Spec{Path: "/bin/sh", Dir: "tmp"}); err == nil {
		t.Error("relative dir accepted")
	}
}

// limitsOf parses /proc/PID/limits output into name -> "soft hard".
func limitsOf(out string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(out, "\n")[1:] {
		if len(line) < 26 {
			continue
		}
		f := strings.Fields(line[26:])
		if len(f) >= 2 {
			m[strings.TrimSpace(line[:26])] = f[0] + " " + f[1]
		}
	}
	return m
}

func TestLimitsVisibleInTarget(t *testing.T) {
	t.Parallel()
	spec := Spec{Path: "/bin/cat", Args: []string{"/proc/self/limits"}, Limits: Limits{
		CPUSeconds: 100, AddressSpace: 8 << 30, FileSize: 1 << 20, OpenFiles: 64, Processes: 500,
	}}
	r := runInit(t, spec)
	got := limitsOf(r.stdout)
	want := map[string]string{
		"Max cpu time":       "100 100",
		"Max address space":  "8589934592 8589934592",
		"Max file size":      "1048576 1048576",
		"Max open files":     "64 64",
		"Max processes":      "500 500",
		"Max core file size": "0 0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q\n%s", k, got[k], v, r.stdout)
		}
	}
	r = runInit(t, sh("ulimit -f; ulimit -n"))
	if r.code != 0 || r.stdout == "" {
		t.Fatalf("ulimit: exit %d %q", r.code, r.stderr)
	}
}

// TestCPULimitKillsBusyLoop: RLIMIT_CPU stops a loop that never ends by
// itself. A busy machine gives the loop its second of CPU later, so the
// wait is bounded by waitLong only to catch a limit that is not enforced.
func TestCPULimitKillsBusyLoop(t *testing.T) {
	t.Parallel()
	spec := sh("while :; do :; done")
	spec.Limits.CPUSeconds = 1
	wait, signal := start(t, spec)
	ended := make(chan struct{})
	var timedOut atomic.Bool
	go func() {
		select {
		case <-ended:
		case <-time.After(waitLong):
			timedOut.Store(true)
			signal(syscall.SIGKILL)
		}
	}()
	r := wait()
	close(ended)
	if timedOut.Load() {
		t.Fatalf("the loop was still running %s after it started, with a CPU limit of 1 s (usage %+v)", waitLong, r.usage)
	}
	if r.usage.Signal != int(syscall.SIGXCPU) && r.usage.Signal != int(syscall.SIGKILL) {
		t.Fatalf("signal %d, want SIGXCPU or SIGKILL (exit %d, stderr %q)", r.usage.Signal, r.code, r.stderr)
	}
	if r.code != 128+r.usage.Signal {
		t.Errorf("exit %d, want %d", r.code, 128+r.usage.Signal)
	}
	// The kernel enforces the limit on the scheduler's exact runtime, while
	// rusage splits sampled ticks into user and system time: under load the
	// two differ by a tenth or more. What matters is that it ran a while
	// before the kernel stopped it, not at once.
	if r.usage.CPUUserMS+r.usage.CPUSysMS < 500 {
		t.Errorf("usage %+v: stopped before it had used the CPU limit", r.usage)
	}
	// The loop is the target itself: its own time is all of it.
	if r.usage.TargetCPUMS < 500 || r.usage.TargetCPUMS > r.usage.CPUUserMS+r.usage.CPUSysMS+1 {
		t.Errorf("usage %+v: the target's own CPU time is not the loop's", r.usage)
	}
}

func TestFileSizeLimitStopsWrite(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "big")
	spec := Spec{Path: "/bin/dd", Args: []string{"if=/dev/zero", "of=" + out, "bs=1024", "count=100"}}
	spec.Limits.FileSize = 4096
	r := runInit(t, spec)
	if r.usage.Signal != int(syscall.SIGXFSZ) || r.code != 128+int(syscall.SIGXFSZ) {
		t.Errorf("exit %d signal %d, want SIGXFSZ (stderr %q)", r.code, r.usage.Signal, r.stderr)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4096 {
		t.Errorf("file grew to %d bytes", fi.Size())
	}
}

// TestEscapedDaemonIsKilled, both ways the init finds descendants: down
// the /proc children files from itself, and through every process's
// parent (kernels without those files).
func TestEscapedDaemonIsKilled(t *testing.T) {
	t.Parallel()
	for _, sweepHost := range []bool{false, true} {
		t.Run(fmt.Sprint("sweepHost=", sweepHost), func(t *testing.T) {
			t.Parallel()
			m := marker()
			spec := sh(fmt.Sprintf(`(setsid sh -c "sleep %s" &) ; (sleep %s &) ; exit 0`, m, m))
			spec.sweepHost = sweepHost
			r := runInit(t, spec)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			gone(t, m)
			if r.usage.DescendantsKilled < 1 {
				t.Errorf("usage %+v: no descendant killed", r.usage)
			}
		})
	}
}

// TestDeepTreeIsKilled: processes several levels down, some in sessions
// of their own, with their parents still alive, die with the target and
// are counted once each.
func TestDeepTreeIsKilled(t *testing.T) {
	t.Parallel()
	for _, sweepHost := range []bool{false, true} {
		t.Run(fmt.Sprint("sweepHost=", sweepHost), func(t *testing.T) {
			t.Parallel()
			m, d := marker(), t.TempDir()
			leaf := filepath.Join(d, "leaf.sh")
			// The shell creates the file itself, not a touch child that a
			// loaded machine may not have reaped when the target sees the
			// file and exits (seen once: 7 descendants killed).
			if err := os.WriteFile(leaf, []byte(`: > "$1"; exec sleep "$2"`), 0o644); err != nil {
				t.Fatal(err)
			}
			// Six processes outlive the target: a setsid'd shell waiting
			// for a sleep and for a shell that waits for another, a sleep
			// in a session of its own, and one left by the target.
			spec := sh(fmt.Sprintf(`setsid sh -c 'sh %[1]s %[2]s/a %[3]s & sh -c "sh %[1]s %[2]s/b %[3]s & wait" & wait' &
				(setsid sh %[1]s %[2]s/c %[3]s &)
				sh %[1]s %[2]s/d %[3]s &
				i=0; while [ $i -lt 500 ]; do
					[ -e %[2]s/a ] && [ -e %[2]s/b ] && [ -e %[2]s/c ] && [ -e %[2]s/d ] && exit 0
					i=$((i+1)); sleep 0.01
				done; exit 9`, leaf, d, m))
			spec.sweepHost = sweepHost
			r := runInit(t, spec)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q: the sleeps did not all start", r.code, r.stderr)
			}
			gone(t, m)
			if r.usage.DescendantsKilled != 6 {
				t.Errorf("usage %+v: want 6 descendants killed", r.usage)
			}
		})
	}
}

// TestTargetSignalState: the target starts with the signal mask the init
// was given (none here), not the init's own, and no signal pending.
func TestTargetSignalState(t *testing.T) {
	t.Parallel()
	r := runInit(t, Spec{Path: "/bin/cat", Args: []string{"/proc/self/status"}})
	for _, want := range []string{"SigBlk:\t0000000000000000\n", "SigPnd:\t0000000000000000\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q (exit %d, stderr %q)\n%s", want, r.code, r.stderr, r.stdout)
		}
	}
}

func TestSeccompVisibleInTarget(t *testing.T) {
	t.Parallel()
	spec := Spec{Path: "/bin/cat", Args: []string{"/proc/self/status"}, Seccomp: true}
	r := runInit(t, spec)
	for _, want := range []string{"NoNewPrivs:\t1\n", "Seccomp:\t2\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q (exit %d, stderr %q)\n%s", want, r.code, r.stderr, r.stdout)
		}
	}
	spec.Seccomp = false
	if r := runInit(t, spec); !strings.Contains(r.stdout, "Seccomp:\t0\n") {
		t.Errorf("seccomp without Seccomp set:\n%s", r.stdout)
	}
}

func TestOnlyStdioReachTarget(t *testing.T) {
	t.Parallel()
	r := runInit(t, sh("ls /proc/$$/fd"))
	if got := strings.Fields(r.stdout); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("target descriptors %v, want [0 1 2] (stderr %q)", got, r.stderr)
	}
}

func TestSIGTERMEndsTree(t *testing.T) {
	t.Parallel()
	m := marker()
	wait, signal := start(t, sh(fmt.Sprintf(`(setsid sleep %s &); sleep %s & wait`, m, m)))
	deadline := time.Now().Add(waitLong)
	for len(running(m)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("target did not start its children")
		}
		time.Sleep(10 * time.Millisecond)
	}
	signal(syscall.SIGTERM)
	r := wait()
	if r.code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, 128+int(syscall.SIGTERM), r.stderr)
	}
	gone(t, m)
}

func TestUsageReported(t *testing.T) {
	t.Parallel()
	m := marker()
	r := runInit(t, sh(fmt.Sprintf(`(setsid sleep %s &); head -c 20000000 /dev/zero | wc -c; exit 3`, m)))
	if r.code != 3 || r.usage.ExitCode != 3 || r.usage.Signal != 0 {
		t.Errorf("exit %d usage %+v", r.code, r.usage)
	}
	if r.usage.MaxRSSKB <= 0 || r.usage.DescendantsKilled != 1 {
		t.Errorf("usage %+v", r.usage)
	}
	gone(t, m)
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	r := runInit(t, Spec{Path: "/bin/sh", Args: []string{"-c", "id -u; id -g; id -G"}, Dir: "/", UID: 65534, GID: 65534})
	if os.Geteuid() != 0 {
		if r.code != ExitCannotExecute {
			t.Errorf("unprivileged credential switch: exit %d, want %d", r.code, ExitCannotExecute)
		}
		return
	}
	if r.stdout != "65534\n65534\n65534\n" {
		t.Errorf("ids %q (exit %d, stderr %q)", r.stdout, r.code, r.stderr)
	}
}
