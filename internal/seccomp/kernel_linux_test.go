package seccomp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary act as the probe child: "filtered"
// installs the filter first, "control" does not.
const childEnv = "EXECLEDGER_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild is the child's main: it reports each probe's outcome, and the
// process's seccomp mode, as a JSON object on stdout.
func runChild(mode string) int {
	runtime.LockOSThread()
	other := startThreadProbe()
	foreign := foreignInstall()
	if mode == "filtered" || mode == "filtered-nounix" {
		f, err := Build(Options{DenyUnixSocket: mode == "filtered-nounix"})
		if err == nil {
			err = f.Install()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	report := map[string]string{
		"seccomp":         procStatus("Seccomp"),
		"no_new_privs":    procStatus("NoNewPrivs"),
		"other_thread":    other(),
		"foreign_install": foreign,
	}
	for _, p := range probes() {
		if mode != "control" || p.control {
			report[p.name] = p.run()
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(report); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// foreignInstall tries to install the filter of the other architecture,
// which must fail before it changes anything.
func foreignInstall() string {
	goarch := "arm64"
	if runtime.GOARCH == "arm64" {
		goarch = "amd64"
	}
	f, err := BuildFor(goarch, Options{})
	if err != nil {
		return "error: " + err.Error()
	}
	if err := f.Install(); !errors.Is(err, ErrUnsupportedArch) {
		return fmt.Sprintf("error: Install() = %v, want ErrUnsupportedArch", err)
	}
	return "refused"
}

// startThreadProbe starts an OS thread now and returns a function that
// makes it try TIOCSTI on a bad fd: EPERM after Install shows the filter
// reached threads that existed before it (TSYNC).
func startThreadProbe() func() string {
	ask, answer := make(chan struct{}), make(chan string)
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		close(ready)
		<-ask
		answer <- sys(unix.SYS_IOCTL, badFD, unix.TIOCSTI)
	}()
	<-ready
	return func() string {
		close(ask)
		return <-answer
	}
}

// procStatus returns a field of /proc/self/status, such as Seccomp ("0"
// for none, "2" for a filter) or NoNewPrivs.
func procStatus(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "error: " + err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "missing"
}

// runProbeChild re-executes the test binary as a probe child.
func runProbeChild(t *testing.T, mode string) map[string]string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	elf := filepath.Join(t.TempDir(), "int80")
	if err := os.WriteFile(elf, int80ELF(), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, elfEnv+"="+elf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s child: %v\nstdout: %s\nstderr: %s", mode, err, stdout.Bytes(), stderr.Bytes())
	}
	var report map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("%s child printed %q: %v (stderr: %s)", mode, stdout.Bytes(), err, stderr.Bytes())
	}
	t.Logf("%s child: %v", mode, report)
	return report
}

// TestFilterInKernel installs the filter in a child process and checks
// what the kernel does with the denied and the ordinary syscalls. A
// control child without the filter shows the probes tell the two apart.
func TestFilterInKernel(t *testing.T) {
	control := runProbeChild(t, "control")
	expectReport(t, "control", control, map[string]string{
		"seccomp":                    procStatus("Seccomp"),
		"no_new_privs":               procStatus("NoNewPrivs"),
		"foreign_install":            "refused",
		"other_thread":               "EBADF",
		"ioctl_tiocsti_badfd":        "EBADF",
		"ioctl_tiocsti_hibits_badfd": "EBADF",
		"ioctl_tioclinux_badfd":      "EBADF",
		"ioctl_tcgets_badfd":         "EBADF",
		"socket_unix":                "ok",
		"socketpair_unix":            "ok",
		"personality_query":          "ok",
		"work_file":                  "ok",
		"work_exec":                  "ok",
	})

	want := map[string]string{
		"seccomp":                    "2",
		"no_new_privs":               "1",
		"foreign_install":            "refused",
		"other_thread":               "EPERM",
		"ioctl_tiocsti_badfd":        "EPERM",
		"ioctl_tiocsti_hibits_badfd": "EPERM",
		"ioctl_tioclinux_badfd":      "EPERM",
		"ioctl_tcgets_badfd":         "EBADF",
		"ioctl_pty":                  "TIOCSTI EPERM, TCGETS ok",
		"io_uring_setup":             "EPERM",
		"keyctl":                     "EPERM",
		"bpf":                        "EPERM",
		"perf_event_open":            "EPERM",
		"userfaultfd":                "EPERM",
		"process_vm_readv":           "EPERM",
		"mount":                      "EPERM",
		"setns":                      "EPERM",
		"clone3":                     "ENOSYS",
		"socket_inet":                "EPERM",
		"socket_inet6":               "EPERM",
		"socket_netlink":             "EPERM",
		"socket_unix":                "ok",
		"socketpair_unix":            "ok",
		"personality_query":          "ok",
		"work_file":                  "ok",
		"work_exec":                  "ok",
		"clone_newuser":              "EPERM",
		"unshare_newnet":             "EPERM",
		"unshare_newuser":            "EPERM",
		"personality_linux32":        "EPERM",
		"ptrace_traceme":             "EPERM",
	}
	if runtime.GOARCH == "amd64" {
		want["x32_getpid"] = "EPERM"
		if control["int80"] == "ok" {
			want["int80"] = "signal SIGSYS"
		} else {
			// Without IA-32 emulation int 0x80 never reaches seccomp.
			t.Logf("int 0x80 fails without the filter too (%s): IA-32 emulation is off", control["int80"])
			want["int80"] = control["int80"]
		}
	}
	expectReport(t, "filtered", runProbeChild(t, "filtered"), want)
	// DenyUnixSocket: no Unix socket can be created, a connected pair can.
	want["socket_unix"] = "EPERM"
	expectReport(t, "filtered-nounix", runProbeChild(t, "filtered-nounix"), want)
}

// expectReport compares a child's report with want, key by key.
func expectReport(t *testing.T, mode string, got, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: probe %s did not report", mode, name)
		} else if g != w {
			t.Errorf("%s: %s = %q, want %q", mode, name, g, w)
		}
	}
}
