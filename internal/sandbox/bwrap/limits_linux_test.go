package bwrap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// limitsOf parses /proc/PID/limits output into name -> "soft hard".
func limitsOf(out string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(out, "\n") {
		if len(line) < 26 || strings.HasPrefix(line, "Limit") {
			continue
		}
		if f := strings.Fields(line[26:]); len(f) >= 2 {
			m[strings.TrimSpace(line[:26])] = f[0] + " " + f[1]
		}
	}
	return m
}

// TestLimitsReachProgram checks, against the installed bwrap, that limits
// set on pid 1 while it blocks on --block-fd are the program's (see
// setLimits): the program and its children see them, and bwrap's pid 1 has
// them too.
func TestLimitsReachProgram(t *testing.T) {
	p := newPlan(t, `cat /proc/self/limits; echo ---; cat /proc/1/limits`)
	p.Limits = procinit.Limits{CPUSeconds: 3, AddressSpace: 4 << 30, FileSize: 1 << 20, OpenFiles: 100, Processes: 50}
	out := run(t, p)
	self, init, ok := strings.Cut(out, "---\n")
	if !ok {
		t.Fatalf("output:\n%s", out)
	}
	want := map[string]string{
		"Max cpu time":       "3 3",
		"Max address space":  "4294967296 4294967296",
		"Max file size":      "1048576 1048576",
		"Max open files":     "100 100",
		"Max processes":      "50 50",
		"Max core file size": "0 0",
	}
	for what, got := range map[string]map[string]string{"program": limitsOf(self), "pid 1": limitsOf(init)} {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
			}
		}
	}
	e := p.Enforcement()
	if e["rlimits_applied"] != LimitsApplied || e["limits"] != p.Limits {
		t.Errorf("enforcement %v", e)
	}
}

// TestLimitsWithoutProgram: a plan whose program is missing fails in bwrap
// after the exchange, as a plain exit status with bwrap's message.
func TestLimitsWithoutProgram(t *testing.T) {
	p := newPlan(t, "")
	p.Program, p.ProgramArgs = "/nonexistent/program", nil
	p.Limits = procinit.Limits{CPUSeconds: 1}
	cmd, err := p.Command(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), "bwrap: execvp /nonexistent/program") {
		t.Errorf("Run = %v, stderr %q", err, stderr.String())
	}
}

// TestNothingLeaksToProgram: the descriptors bwrap reads (memfds, seccomp,
// --info-fd, --block-fd) are closed before the program starts; the plan's
// ExtraFiles arrive at 3, 4, ... and ProgramFile after them.
func TestNothingLeaksToProgram(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteString("passed along\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	shell, err := os.Open("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	defer shell.Close()
	p := newPlan(t, "")
	p.ProgramFile, p.Program = shell, "sh"
	// The shell execs ls, which lists the descriptors it inherited and the
	// one it reads the list through, the lowest free: listing the shell's
	// from another process races with the shell's own pipes and saved
	// descriptors.
	p.ProgramArgs = []string{"-c", `cat <&3; echo "argv0 $0"; exec ls /proc/self/fd`}
	p.ExtraFiles = []*os.File{r}
	p.Limits = procinit.Limits{OpenFiles: 64}
	out := run(t, p)
	t.Logf("\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || lines[0] != "passed along" || lines[1] != "argv0 /proc/self/fd/4" {
		t.Fatalf("output %q", out)
	}
	if fds := lines[2:]; !slices.Equal(fds, []string{"0", "1", "2", "3", "4", "5"}) {
		t.Errorf("the program holds descriptors %v, want 0-2, the passed 3, its own 4 and ls's 5", fds)
	}
}

// hostUIDPlan returns a plan for script that runs bwrap as 65534 on the
// host, with a workspace that uid owns.
func hostUIDPlan(t *testing.T, script string) Plan {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test starts bwrap under another uid and must run as root (euid %d)", os.Geteuid())
	}
	p := newPlan(t, script)
	for d := p.Workspace; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(p.Workspace, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	p.HostUID, p.HostGID = Nobody, Nobody
	return p
}

// TestHostUIDOwnsSandbox: with HostUID the sandbox's processes and files
// belong to that uid on the host, not to the root caller.
func TestHostUIDOwnsSandbox(t *testing.T) {
	p := hostUIDPlan(t, `echo hi > /workspace/out; id -u; grep 'Max processes' /proc/self/limits | tr -s ' '; sleep 0.`+strconv.Itoa(3000000+os.Getpid()%999999))
	// Set by prlimit(1) as HostUID when the caller lacks CAP_SYS_RESOURCE.
	p.Limits = procinit.Limits{Processes: 77}
	cmd, err := p.Command(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(cmd.Process.Pid), &st); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if st.Uid != Nobody {
		t.Errorf("bwrap runs as host uid %d, want %d", st.Uid, Nobody)
	}
	if out.String() != "65534\nMax processes 77 77 processes \n" {
		t.Errorf("output %q", out.String())
	}
	fi, err := os.Stat(filepath.Join(p.Workspace, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if fs := fi.Sys().(*syscall.Stat_t); fs.Uid != Nobody || fs.Gid != Nobody {
		t.Errorf("the sandbox's file belongs to %d:%d on the host, want %d:%d", fs.Uid, fs.Gid, Nobody, Nobody)
	}
	if e := p.Enforcement(); e["host_uid"] != uint32(Nobody) {
		t.Errorf("enforcement %v", e)
	}
}

// TestProcessLimitBoundsForkBomb: RLIMIT_NPROC holds in a sandbox bwrap
// runs as an unprivileged host uid. (For host uid 0 the kernel exempts it:
// that is why a root caller sets HostUID.) The kernel counts processes per
// user namespace and uid, so the bound is this sandbox's, whatever else
// that uid runs on the machine.
func TestProcessLimitBoundsForkBomb(t *testing.T) {
	m := strconv.Itoa(4000000 + os.Getpid()%999999)
	// dash gives up at the first fork that fails, after writing how many
	// sleeps it started.
	p := hostUIDPlan(t, `i=0; while [ $i -lt 200 ]; do sleep `+m+` & i=$((i+1)); echo $i > /workspace/n; done`)
	p.Limits = procinit.Limits{Processes: 20}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	err := p.Run(ctx, &out, &out)
	b, rerr := os.ReadFile(filepath.Join(p.Workspace, "n"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Logf("started %d sleeps; exit %v; %s", n, err, strings.TrimSpace(out.String()))
	if err == nil || n < 5 || n > 18 {
		t.Errorf("started %d sleeps under RLIMIT_NPROC 20 (bwrap's pid 1 and sh count too), exit %v", n, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(sleepers(m)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sleeps survive the sandbox: %v", sleepers(m))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLimitsAsHostUIDLeaveThreadsAlone: setting limits as HostUID switches
// one thread's real ids and back; afterwards every thread of this process
// has its own ids again.
func TestLimitsAsHostUIDLeaveThreadsAlone(t *testing.T) {
	p := hostUIDPlan(t, "true")
	p.Limits = procinit.Limits{CPUSeconds: 5}
	want := fmt.Sprintf("%d\t%d\t%d\t%d", os.Getuid(), os.Geteuid(), os.Getuid(), os.Getuid())
	for range 10 {
		run(t, p)
	}
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads: %v %v", tasks, err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:\t"); ok && v != want {
				t.Errorf("%s: Uid %q, want %q", f, v, want)
			}
		}
	}
}

// TestChildPid decodes --info-fd reports as bwrap writes them, and reports
// that end early.
func TestChildPid(t *testing.T) {
	for report, want := range map[string]string{
		"{\n    \"child-pid\": 4242\n}\n": "4242",
		"":                                "--info-fd report: EOF",
		"{\n    \"child-pid\": 42":        "--info-fd report: unexpected EOF",
		"{\"child-pid\": 1}":              "--info-fd report: child-pid 1",
	} {
		r, w, err := blockingPipe()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteString(report); err != nil {
			t.Fatal(err)
		}
		w.Close()
		pid, err := childPid(r)
		r.Close()
		got := strconv.Itoa(pid)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("report %q: got %s, want %s", report, got, want)
		}
	}
}
