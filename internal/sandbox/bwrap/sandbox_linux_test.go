package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
)

// probeEnv names the probe the test binary runs when started inside a
// sandbox; probeTarget is its address.
const (
	probeEnv    = "BWRAP_TEST_PROBE"
	probeTarget = "BWRAP_TEST_TARGET"
)

// skeletonBase holds the skeletons of the tests' Hosts.
var skeletonBase string

func TestMain(m *testing.M) {
	if probe := os.Getenv(probeEnv); probe != "" {
		os.Exit(runProbe(probe, os.Getenv(probeTarget)))
	}
	os.Exit(runTests(m))
}

// runTests runs m with skeletonBase made, in a directory every uid may
// search (the host-uid tests run bwrap as 65534), and removed afterwards.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "bwrap-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o711); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	skeletonBase = filepath.Join(dir, "skeletons")
	return m.Run()
}

// newHost returns a Host for the default ids with its skeleton in
// skeletonBase.
func newHost(t testing.TB) *Host {
	t.Helper()
	h, err := NewHost(skeletonBase, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// runProbe dials target over tcp or unix and prints the outcome.
func runProbe(network, target string) int {
	c, err := net.DialTimeout(network, target, 2*time.Second)
	if err != nil {
		fmt.Printf("dial %s %s: failed: %v\n", network, target, err)
		return 0
	}
	defer c.Close()
	fmt.Fprint(c, "ping")
	fmt.Printf("dial %s %s: connected\n", network, target)
	return 0
}

// requireBwrap fails the test when bubblewrap is missing.
func requireBwrap(t testing.TB) {
	t.Helper()
	path, version, err := Available()
	if err != nil {
		t.Fatalf("bubblewrap is required, install it with apt-get install -y bubblewrap: %v", err)
	}
	t.Logf("using %s %s", path, version)
}

// newPlan returns a plan for script under /bin/sh with the default seccomp
// filter, a fresh workspace and a Host, as tier C runs it.
func newPlan(t testing.TB, script string) Plan {
	t.Helper()
	requireBwrap(t)
	f, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Program: "/bin/sh", ProgramArgs: []string{"-c", script}, Workspace: t.TempDir(), Seccomp: f, Host: newHost(t)}
}

// run runs p and returns its combined output; a non-zero exit is an error.
func run(t testing.TB, p Plan) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := p.Run(ctx, &out, &out); err != nil {
		t.Fatalf("sandbox failed: %v\n%s", err, out.String())
	}
	return out.String()
}

func TestIdentityCapabilitiesSeccomp(t *testing.T) {
	out := run(t, newPlan(t, `grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; id -u; id -un; tty || true`))
	t.Logf("\n%s", out)
	for _, want := range []string{
		"Uid:\t65534\t65534\t65534\t65534\n", "Gid:\t65534\t65534\t65534\t65534\n",
		"CapEff:\t0000000000000000\n", "CapPrm:\t0000000000000000\n", "CapBnd:\t0000000000000000\n",
		"NoNewPrivs:\t1\n", "Seccomp:\t2\n", "\nsandbox\n", "not a tty",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestHostFilesInvisible(t *testing.T) {
	hidden := []string{"/root", "/home", "/var/lib/postgresql", "/etc/shadow", "/var/run", "/run/postgresql", "/sys", "/work", "/etc/nsswitch.conf"}
	for _, p := range hidden {
		if _, err := os.Stat(p); err != nil {
			t.Logf("note: %s does not exist on the host either", p)
		}
	}
	out := run(t, newPlan(t, `for p in `+strings.Join(hidden, " ")+`; do test -e $p && echo "visible $p"; done; cat /etc/passwd; ls /etc; echo done`))
	t.Logf("\n%s", out)
	if strings.Contains(out, "visible") {
		t.Errorf("host paths visible in the sandbox:\n%s", out)
	}
	if strings.Contains(out, "root:") || !strings.Contains(out, "sandbox:x:65534:65534:") {
		t.Errorf("/etc/passwd is not the generated one:\n%s", out)
	}
}

func TestWritableOnlyWorkspaceAndTmp(t *testing.T) {
	p := newPlan(t, `for f in /usr/x /x /etc/x /etc/passwd /workspace/out /tmp/out; do if echo hi > $f 2>/dev/null; then echo "wrote $f"; else echo "denied $f"; fi; done`)
	out := run(t, p)
	t.Logf("\n%s", out)
	for _, want := range []string{"denied /usr/x", "denied /x", "denied /etc/x", "denied /etc/passwd", "wrote /workspace/out", "wrote /tmp/out"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q", want)
		}
	}
	// The user namespace maps the sandbox's 65534 to the uid that ran bwrap:
	// that is who owns the file on the host.
	fi, err := os.Stat(filepath.Join(p.Workspace, "out"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	t.Logf("host sees /workspace/out as uid %d gid %d, mode %v (test runs as uid %d)", st.Uid, st.Gid, fi.Mode(), os.Getuid())
	if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
		t.Errorf("host owner %d:%d, want the caller %d:%d", st.Uid, st.Gid, os.Getuid(), os.Getgid())
	}
}

func TestNetworkIsolated(t *testing.T) {
	out := run(t, newPlan(t, `cat /proc/net/dev`))
	t.Logf("\n%s", out)
	var ifaces []string
	for _, line := range strings.Split(out, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if strings.Join(ifaces, ",") != "lo" {
		t.Errorf("interfaces = %v, want only lo", ifaces)
	}
}

// probePlan runs this test binary inside the sandbox to dial target.
func probePlan(t *testing.T, network, target string) Plan {
	t.Helper()
	requireBwrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Plan{
		Program:       exe,
		Env:           []string{probeEnv + "=" + network, probeTarget + "=" + target},
		Workspace:     t.TempDir(),
		ReadOnlyBinds: []string{exe},
		Host:          newHost(t),
	}
}

func TestHostServicesUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	targets := [][2]string{
		{"tcp", "127.0.0.1:5432"}, // the host's Postgres
		{"tcp", ln.Addr().String()},
		{"unix", "/var/run/postgresql/.s.PGSQL.5432"},
	}
	for _, tg := range targets {
		if c, err := net.DialTimeout(tg[0], tg[1], time.Second); err == nil {
			c.Close()
		} else {
			t.Logf("note: %s %s is not reachable from the host either: %v", tg[0], tg[1], err)
		}
	}
	inet, err := seccomp.Build(seccomp.Options{AllowInet: true})
	if err != nil {
		t.Fatal(err)
	}
	unixOnly, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Without a filter or with AllowInet only the namespaces stand in the
	// way; the default filter also fails the AF_INET socket call.
	for _, sc := range []*seccomp.Filter{unixOnly, inet, nil} {
		for _, tg := range targets {
			p := probePlan(t, tg[0], tg[1])
			p.Seccomp = sc
			out := run(t, p)
			t.Logf("seccomp=%v allow_inet=%v: %s", sc != nil, sc != nil && sc.Options().AllowInet, strings.TrimSpace(out))
			if sc == unixOnly && tg[0] == "tcp" && !strings.Contains(out, "operation not permitted") {
				t.Errorf("the default filter did not deny the AF_INET socket:\n%s", out)
			}
			if !strings.Contains(out, ": failed: ") {
				t.Errorf("sandbox reached %s %s:\n%s", tg[0], tg[1], out)
			}
		}
	}
}

func TestProxySocketReachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		n, _ := c.Read(buf)
		got <- string(buf[:n])
	}()
	f, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := probePlan(t, "unix", ProxyPath)
	p.ProxySocket, p.Seccomp = sock, f
	out := run(t, p)
	t.Logf("%s", strings.TrimSpace(out))
	if !strings.Contains(out, "connected") {
		t.Fatalf("proxy socket not reachable:\n%s", out)
	}
	select {
	case s := <-got:
		if s != "ping" {
			t.Errorf("proxy read %q", s)
		}
	case <-time.After(2 * time.Minute):
		t.Error("proxy saw no connection")
	}
}

func TestHostProcessesInvisible(t *testing.T) {
	out := run(t, newPlan(t, `for d in /proc/[0-9]*; do echo "${d#/proc/} $(tr '\0' ' ' < $d/cmdline)"; done`))
	t.Logf("\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 4 {
		t.Errorf("%d processes visible, want bwrap's init, sh and its child", len(lines))
	}
	for _, l := range lines {
		pid, _, _ := strings.Cut(l, " ")
		if n, err := strconv.Atoi(pid); err != nil || n > 10 {
			t.Errorf("unexpected pid in the sandbox: %q", l)
		}
	}
}

func TestNestedUserNamespacesFail(t *testing.T) {
	script := `unshare -U true 2>&1; echo rc=$?; unshare -Ur true 2>&1; echo rc=$?`
	withFilter := run(t, newPlan(t, script))
	p := newPlan(t, script)
	p.Seccomp = nil
	withoutFilter := run(t, p) // --disable-userns alone
	t.Logf("with seccomp:\n%swithout seccomp:\n%s", withFilter, withoutFilter)
	for name, out := range map[string]string{"with seccomp": withFilter, "disable-userns only": withoutFilter} {
		if strings.Contains(out, "rc=0") || strings.Count(out, "rc=1") != 2 {
			t.Errorf("%s: unshare -U did not fail:\n%s", name, out)
		}
	}
	if !strings.Contains(withFilter, "Operation not permitted") {
		t.Errorf("seccomp did not deny unshare with EPERM:\n%s", withFilter)
	}
}

func TestCancelKillsSandbox(t *testing.T) {
	marker := strconv.Itoa(90000 + os.Getpid()%9999)
	p := newPlan(t, `sleep `+marker+` & sleep `+marker+`; wait`)
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := p.Command(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(sleepers(marker)) < 2 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the sandboxed sleeps never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := cmd.Wait(); err == nil || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Wait = %v after cancel", err)
	}
	for len(sleepers(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxed processes survive the cancel: %v", sleepers(marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sleepers returns the host pids running `sleep marker`.
func sleepers(marker string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && string(b) == "sleep\x00"+marker+"\x00" {
			if st, err := os.ReadFile(d + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie is already dead
			}
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// BenchmarkTrue runs /bin/true bare and in sandboxes that differ in what
// Command adds: the rlimit exchange (set directly, as the caller's own
// uid), and bwrap run as another host uid (whose limits a root caller
// without CAP_SYS_RESOURCE sets through prlimit(1)). Besides wall time it
// reports the CPU time per run of this process (self-cpu-ns/op) and of the
// processes it waited for (children-cpu-ns/op).
func BenchmarkTrue(b *testing.B) {
	limits := procinit.Limits{CPUSeconds: 2, OpenFiles: 256, FileSize: 1 << 26, Processes: 256}
	hostUID := func(p *Plan) {
		p.HostUID, p.HostGID = Nobody, Nobody
		for d := p.Workspace; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o711); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("bare", func(b *testing.B) {
		measureCPU(b, func() error { return exec.Command("/bin/true").Run() })
	})
	variants := []struct {
		name string
		mod  func(*Plan)
	}{
		{"bwrap", func(*Plan) {}},
		{"bwrap_limits", func(p *Plan) { p.Limits = limits }},
		{"bwrap_host_uid", hostUID},
		{"bwrap_host_uid_limits", func(p *Plan) { hostUID(p); p.Limits = limits }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			p := newPlan(b, "")
			p.Program, p.ProgramArgs = "/bin/true", nil
			v.mod(&p)
			ctx := context.Background()
			measureCPU(b, func() error { return p.Run(ctx, nil, nil) })
		})
	}
}

// measureCPU runs f b.N times and reports the CPU time per run.
func measureCPU(b *testing.B, f func() error) {
	cpu := func(who int) time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	self, children := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu(syscall.RUSAGE_SELF)-self)/float64(b.N), "self-cpu-ns/op")
	b.ReportMetric(float64(cpu(syscall.RUSAGE_CHILDREN)-children)/float64(b.N), "children-cpu-ns/op")
}

// TestProbe: where bubblewrap makes sandboxes Probe says so; without
// bwrap in PATH it reports ErrUnavailable rather than a tier C that
// cannot start.
func TestProbe(t *testing.T) {
	requireBwrap(t)
	if err := Probe(context.Background()); err != nil {
		t.Fatalf("Probe where bubblewrap works: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := Probe(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Probe without bwrap: %v, want ErrUnavailable", err)
	}
}
