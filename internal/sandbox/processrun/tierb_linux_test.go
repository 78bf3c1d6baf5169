package processrun

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/cgroup"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/ledger"
)

var tbParents atomic.Int64

// tbCgroupTool is a tier B tool that must use cgroups (the machines these
// tests run on have a writable cgroup2 hierarchy; without one New fails and
// so does the test), under a cgroup parent of its own that must be empty
// when the test ends.
func tbCgroupTool(t *testing.T, pol procinput.Policy, mod ...func(*Config)) *Tool {
	t.Helper()
	return cgroupTool(t, "B", pol, mod...)
}

// cgroupTool is tbCgroupTool for either tier.
func cgroupTool(t *testing.T, tier string, pol procinput.Policy, mod ...func(*Config)) *Tool {
	t.Helper()
	name := fmt.Sprintf("exltest-pr-%d-%d", os.Getpid(), tbParents.Add(1))
	mod = append([]func(*Config){func(c *Config) {
		c.Cgroups = CgroupsRequired
		c.CgroupOptions = cgroup.Options{Name: name}
	}}, mod...)
	tool := newTool(t, tier, pol, mod...)
	if tool.cfg.cgroups == nil || tool.cfg.cgroups.m == nil {
		t.Fatalf("a tier %s tool with cgroups required uses none", tier)
	}
	parent := tool.cfg.cgroups.m.Path()
	t.Cleanup(func() {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("cgroup %s left behind in %s", e.Name(), parent)
			}
		}
		if _, err := tool.SweepOrphans(context.Background()); err != nil {
			t.Error(err)
		}
		if err := syscall.Rmdir(parent); err != nil {
			t.Errorf("remove %s: %v", parent, err)
		}
	})
	return tool
}

// tbMarker is a sleep duration no other test uses, to find its processes.
func tbMarker(whole int) string {
	return fmt.Sprintf("%d.%09d", whole, rand.IntN(1_000_000_000))
}

// tbPids returns the pids of survivors(marker).
func tbPids(marker string) []int {
	var out []int
	for _, s := range survivors(marker) {
		p, _, _ := strings.Cut(s, ":")
		if pid, err := strconv.Atoi(p); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// tbWaitPid waits until exactly one process runs "sleep marker" and returns
// it.
func tbWaitPid(t *testing.T, marker string) int {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		if p := tbPids("sleep\x00" + marker); len(p) == 1 {
			return p[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single sleep %s started: %v", marker, survivors(marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tbScript(t *testing.T, tool *Tool, runID, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(prepare(t, tool, runID), name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tbCgroupRecord returns the enforcement record's "cgroup" map, failing t
// unless it shows cgroup v2 with cgroup.kill and a released leaf.
func tbCgroupRecord(t *testing.T, res executor.Result) map[string]any {
	t.Helper()
	rec, ok := res.Enforcement["cgroup"].(map[string]any)
	if !ok {
		t.Fatalf("enforcement cgroup %v, want a cgroup v2 record", res.Enforcement["cgroup"])
	}
	if rec["version"] != 2 || rec["kill"] != cgroup.KillFile || rec["released"] == nil || rec["release_error"] != nil {
		t.Errorf("cgroup record %v", rec)
	}
	if _, ok := rec["controllers"].([]string); !ok {
		t.Errorf("cgroup record lacks its controllers: %v", rec)
	}
	dir := filepath.Join(rec["mount"].(string), rec["path"].(string))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leaf %s still there: %v", dir, err)
	}
	return rec
}

// TestTierBCgroupLeaf: a tier B process runs in a leaf of its own, which
// is recorded, reported (CPU) and removed, and a setsid'd daemon does not
// outlive the call.
func TestTierBCgroupLeaf(t *testing.T) {
	tool := tbCgroupTool(t, procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true})
	m := tbMarker(300)
	tbScript(t, tool, "run-1", "escape.sh", "cat /proc/self/cgroup\n(setsid sleep "+m+" >/dev/null 2>&1 &)\n")
	res := tool.Run(context.Background(), call("run-1", input(t, "sh", "escape.sh")))
	if res.ErrorKind != "" {
		t.Fatalf("%s: %s (%s)", res.ErrorKind, res.Error, res.Output)
	}
	rec := tbCgroupRecord(t, res)
	t.Logf("enforcement: cgroup %v, uid %v, uid_scope %v", rec, res.Enforcement["uid"], res.Enforcement["uid_scope"])
	if o := decode(t, res); !strings.Contains("\n"+o.Stdout, "\n0::"+rec["path"].(string)+"\n") {
		t.Errorf("the program ran in %q, the record says %v", o.Stdout, rec["path"])
	}
	for _, k := range []string{"cgroup_cpu_usage_usec", "cgroup_cpu_user_usec", "cgroup_cpu_system_usec", "cgroup_procs_killed"} {
		if _, ok := res.Resources[k]; !ok {
			t.Errorf("resources lack %s: %v", k, res.Resources)
		}
	}
	if res.Resources["cgroup_cpu_usage_usec"] <= 0 {
		t.Errorf("cgroup CPU usage %d", res.Resources["cgroup_cpu_usage_usec"])
	}
	waitNoSurvivors(t, m)
}

// TestTierBInitKilled: when the init itself is SIGKILLed (as when the
// executor is killed and PDEATHSIG fires), the target dies of its own
// PDEATHSIG but a setsid'd daemon and the target's other children are
// nobody's: only the cgroup leaf reaches them. Without cgroups they
// survive, which the "off" case shows.
func TestTierBInitKilled(t *testing.T) {
	pol := procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true}
	for _, mode := range []string{CgroupsRequired, CgroupsOff} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var tool *Tool
			if mode == CgroupsOff {
				tool = newTool(t, "B", pol, func(c *Config) { c.Cgroups = CgroupsOff })
			} else {
				tool = tbCgroupTool(t, pol)
			}
			daemon, child := tbMarker(301), tbMarker(302)
			tbScript(t, tool, "run-1", "stay.sh", "(setsid sleep "+daemon+" >/dev/null 2>&1 &)\nsleep "+child+"\n")
			done := make(chan executor.Result, 1)
			go func() { done <- tool.Run(context.Background(), call("run-1", input(t, "sh", "stay.sh"))) }()

			// sleep <child> is the target's child, the target the init's.
			sh, _ := parentOf(tbWaitPid(t, child))
			init, _ := parentOf(sh)
			if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(init) + "/cmdline"); !strings.Contains(string(cmdline), procinit.Hidden) {
				t.Fatalf("process %d above the target is %q, not the init", init, cmdline)
			}
			tbWaitPid(t, daemon)
			if err := syscall.Kill(init, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var res executor.Result
			select {
			case res = <-done:
			case <-time.After(waitLong):
				t.Fatal("the call did not end after its init was killed")
			}
			if res.ErrorKind != ledger.KindRuntimeFailure || decode(t, res).Signal != int(syscall.SIGKILL) {
				t.Errorf("%s: %s (%s)", res.ErrorKind, res.Error, res.Output)
			}
			if mode == CgroupsOff {
				if res.Enforcement["cgroup"] != "off: disabled by configuration" {
					t.Errorf("enforcement cgroup %v", res.Enforcement["cgroup"])
				}
				left := append(tbPids("sleep\x00"+daemon), tbPids("sleep\x00"+child)...)
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				if len(left) != 2 {
					t.Errorf("without cgroups %d of the 2 orphans survived; this test no longer shows what the leaf adds", len(left))
				}
				return
			}
			tbCgroupRecord(t, res)
			if n := res.Resources["cgroup_procs_killed"]; n < 2 {
				t.Errorf("cgroup_procs_killed %d, want the daemon and the child", n)
			}
			waitNoSurvivors(t, daemon)
			waitNoSurvivors(t, child)
		})
	}
}

// TestTierBCgroupStopKillsLeaf: a timed-out call's leaf is killed and
// removed too.
func TestTierBCgroupStopKillsLeaf(t *testing.T) {
	tool := tbCgroupTool(t, procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true})
	daemon := tbMarker(303)
	tbScript(t, tool, "run-1", "loop.sh", "(setsid sleep "+daemon+" >/dev/null 2>&1 &)\nwhile :; do :; done\n")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res := tool.Run(ctx, call("run-1", input(t, "sh", "loop.sh")))
	if res.ErrorKind != ledger.KindTimedOut {
		t.Fatalf("%s: %s", res.ErrorKind, res.Error)
	}
	tbCgroupRecord(t, res)
	waitNoSurvivors(t, daemon)
}

// TestTierBCgroupModes: what is recorded, or refused, when cgroups are off
// or unavailable.
func TestTierBCgroupModes(t *testing.T) {
	noV2 := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(noV2, []byte("35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := procinput.Policy{AllowedExecutables: []string{"echo"}}
	unavailable := func(c *Config) { c.CgroupOptions = cgroup.Options{MountInfo: noV2} }
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"auto without cgroup2", unavailable, "unavailable: cgroup v2 is unavailable: no cgroup2 file system"},
		{"off", func(c *Config) { c.Cgroups = CgroupsOff }, "off: disabled by configuration"},
	}
	for _, c := range cases {
		tool := newTool(t, "B", pol, c.mod)
		res := tool.Run(context.Background(), call("run-1", input(t, "echo", "hi")))
		if res.ErrorKind != "" {
			t.Fatalf("%s: %s: %s", c.name, res.ErrorKind, res.Error)
		}
		if got, _ := res.Enforcement["cgroup"].(string); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: enforcement cgroup %v, want %q...", c.name, res.Enforcement["cgroup"], c.want)
		}
		if _, ok := res.Resources["cgroup_cpu_usage_usec"]; ok {
			t.Errorf("%s: cgroup figures without a cgroup: %v", c.name, res.Resources)
		}
	}
	self, _ := os.Executable()
	cfg := Config{Tier: "B", Self: self, WorkspaceRoot: t.TempDir(), Cgroups: CgroupsRequired, CgroupOptions: cgroup.Options{MountInfo: noV2}}
	if _, err := New(cfg); !errors.Is(err, cgroup.ErrUnavailable) {
		t.Errorf("required without cgroup2: %v", err)
	}
	cfg.Cgroups = "sometimes"
	if _, err := New(cfg); err == nil {
		t.Error("New accepted cgroups mode \"sometimes\"")
	}
}

// TestTierBSweepOrphans: the leaf of a dead executor's process is found,
// killed and removed.
func TestTierBSweepOrphans(t *testing.T) {
	tool := tbCgroupTool(t, procinput.Policy{AllowedExecutables: []string{"echo"}})
	pidMax, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(pidMax)))
	owner := fmt.Sprintf("x-%d-1", n+1)
	leafDir := filepath.Join(tool.cfg.cgroups.m.Path(), owner, "p-orphan")
	if err := os.MkdirAll(leafDir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := tbMarker(304)
	cmd := startInCgroup(t, leafDir, "sleep", m)
	found, err := tool.SweepOrphans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Owner != owner || found[0].Leaf != "p-orphan" || len(found[0].PIDs) != 1 || found[0].PIDs[0] != cmd.Process.Pid {
		t.Errorf("orphans %+v, want sleep %d in %s/p-orphan", found, cmd.Process.Pid, owner)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("orphan ended with %v", err)
	}
	if _, err := os.Stat(filepath.Dir(leafDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead owner directory still there: %v", err)
	}
	off := newTool(t, "B", procinput.Policy{}, func(c *Config) { c.Cgroups = CgroupsOff })
	if found, err := off.SweepOrphans(context.Background()); found != nil || err != nil {
		t.Errorf("sweep without cgroups: %v %v", found, err)
	}
}

// tbRoot fails t unless the test runs as root: per-run uids need it.
func tbRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("per-run uids need root: run these tests as root")
	}
}

// tbID runs `id` in run and returns its uid, failing t unless gid and
// groups are that same number alone.
func tbID(t *testing.T, tool *Tool, runID string) uint32 {
	t.Helper()
	res := tool.Run(context.Background(), call(runID, input(t, "id")))
	if res.ErrorKind != "" {
		t.Fatalf("id in %s: %s: %s", runID, res.ErrorKind, res.Error)
	}
	out := strings.TrimSpace(decode(t, res).Stdout)
	var uid, gid, groups uint32
	if _, err := fmt.Sscanf(out, "uid=%d gid=%d groups=%d", &uid, &gid, &groups); err != nil || gid != uid || groups != uid ||
		strings.Contains(out, ",") {
		t.Fatalf("id in %s: %q (%v)", runID, out, err)
	}
	if res.Enforcement["uid"] != uid || res.Enforcement["gid"] != uid || res.Enforcement["uid_scope"] != "run" {
		t.Errorf("enforcement uid %v gid %v scope %v, the program ran as %d", res.Enforcement["uid"], res.Enforcement["gid"], res.Enforcement["uid_scope"], uid)
	}
	if owner, err := ownerOf(workspaceOf(tool, runID)); err != nil || owner != uid {
		t.Errorf("workspace of %s owned by %d (%v), the program ran as %d", runID, owner, err, uid)
	}
	return uid
}

// TestPerRunUIDs: two runs get two uids of the range, a run keeps its uid,
// and a workspace owned by a uid outside the range gets one of its own.
func TestPerRunUIDs(t *testing.T) {
	tbRoot(t)
	tool := newTool(t, "B", procinput.Policy{AllowedExecutables: []string{"id"}})
	a, b := tbID(t, tool, "run-a"), tbID(t, tool, "run-b")
	if a == b || !tool.inRange(a) || !tool.inRange(b) {
		t.Errorf("run-a uid %d, run-b uid %d: want two uids of %s", a, b, tool.rangeText())
	}
	if again := tbID(t, tool, "run-a"); again != a {
		t.Errorf("run-a got uid %d, then %d", a, again)
	}
	legacy := prepare(t, tool, "run-legacy")
	if err := os.Lchown(legacy, DefaultUID, DefaultGID); err != nil {
		t.Fatal(err)
	}
	if u := tbID(t, tool, "run-legacy"); u == a || u == b || !tool.inRange(u) {
		t.Errorf("a workspace owned by %d got uid %d", DefaultUID, u)
	}
}

// TestPerRunUIDsConcurrent: workspaces made at once never share a uid.
func TestPerRunUIDsConcurrent(t *testing.T) {
	tbRoot(t)
	tool := newTool(t, "B", procinput.Policy{})
	const runs = 16
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() {
			_, err := tool.workspace(call(fmt.Sprintf("run-%d", i), "{}"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint32]string{}
	for i := range runs {
		run := fmt.Sprintf("run-%d", i)
		uid, err := ownerOf(workspaceOf(tool, run))
		if err != nil || !tool.inRange(uid) {
			t.Fatalf("%s: uid %d (%v)", run, uid, err)
		}
		if other, ok := seen[uid]; ok {
			t.Errorf("%s and %s share uid %d", run, other, uid)
		}
		seen[uid] = run
	}
}

// TestRunsCannotReachEachOther: a process of run A can neither signal a
// process of run B nor read B's workspace, while B itself can do both.
func TestRunsCannotReachEachOther(t *testing.T) {
	tbRoot(t)
	tool := newTool(t, "B", procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true})
	m := tbMarker(305)
	tbScript(t, tool, "run-b", "serve.sh", "echo b-private > data.txt\nchmod 644 data.txt\nsleep "+m+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan executor.Result, 1)
	go func() { done <- tool.Run(ctx, call("run-b", input(t, "sh", "serve.sh"))) }()
	defer func() {
		cancel()
		<-done
	}()
	pid := strconv.Itoa(tbWaitPid(t, m))
	bws := workspaceOf(tool, "run-b")

	res := tool.Run(context.Background(), call("run-a", input(t, "kill", "-0", pid)))
	if o := decode(t, res); res.ErrorKind != ledger.KindRuntimeFailure || !strings.Contains(o.Stderr, "Operation not permitted") {
		t.Errorf("run-a kill -0 %s: %s (%+v)", pid, res.ErrorKind, o)
	}
	tbScript(t, tool, "run-a", "peek.sh", "cat "+bws+"/data.txt\nls "+bws+"\nkill -9 "+pid+"\n")
	res = tool.Run(context.Background(), call("run-a", input(t, "sh", "peek.sh")))
	o := decode(t, res)
	// The workspace root here is under /tmp, which each tier B process sees
	// as a private tmpfs holding only its own run's workspace: run-b's is
	// not there at all. (Elsewhere its mode 0700 refuses run-a.)
	if strings.Contains(o.Stdout, "b-private") || strings.Count(o.Stderr, "No such file or directory")+strings.Count(o.Stderr, "Permission denied") != 2 ||
		!strings.Contains(o.Stderr, "Operation not permitted") {
		t.Errorf("run-a reached run-b: stdout %q, stderr %q", o.Stdout, o.Stderr)
	}
	if res := tool.Run(context.Background(), call("run-b", input(t, "kill", "-0", pid))); res.ErrorKind != "" {
		t.Errorf("run-b kill -0 of its own process: %s: %s", res.ErrorKind, decode(t, res).Stderr)
	}
	select {
	case res := <-done:
		t.Fatalf("run-b's process ended: %s %s", res.ErrorKind, res.Output)
	default:
	}
}

// TestUIDRangeExhausted: with a range of two, a third run is refused with
// spawn_failed and a message that says why; the first two keep working.
func TestUIDRangeExhausted(t *testing.T) {
	tbRoot(t)
	tool := newTool(t, "B", procinput.Policy{AllowedExecutables: []string{"id"}}, func(c *Config) {
		c.UIDBase, c.UIDCount = 300000, 2
	})
	a, b := tbID(t, tool, "run-1"), tbID(t, tool, "run-2")
	if min(a, b) != 300000 || max(a, b) != 300001 {
		t.Errorf("uids %d and %d, want 300000 and 300001", a, b)
	}
	res := tool.Run(context.Background(), call("run-3", input(t, "id")))
	if res.ErrorKind != ledger.KindSpawnFailed || !strings.Contains(res.Error, "no free sandbox uid: all 2 uids of [300000, 300001] own a workspace") {
		t.Errorf("third run: %s: %s", res.ErrorKind, res.Error)
	}
	if again := tbID(t, tool, "run-1"); again != a {
		t.Errorf("run-1 uid %d, then %d", a, again)
	}
	if _, err := New(Config{Tier: "B", Self: tool.cfg.Self, WorkspaceRoot: t.TempDir(), UIDBase: 1 << 31, UIDCount: 1 << 31}); err == nil {
		t.Error("New accepted a uid range reaching (uid_t)-1")
	}
}

// BenchmarkWorkspaceUID is the cost of giving a new run its uid with 1000
// workspaces on the host (the scan is linear in their number).
func BenchmarkWorkspaceUID(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("per-run uids need root")
	}
	self, _ := os.Executable()
	tool, err := New(Config{Tier: "B", Self: self, WorkspaceRoot: filepath.Join(b.TempDir(), "ws"), Cgroups: CgroupsOff})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, err := tool.workspace(call(fmt.Sprintf("old-%d", i), "{}")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		dir, err := tool.workspace(call(fmt.Sprintf("new-%d", i), "{}"))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.Remove(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// startInCgroup starts name args inside the cgroup directory dir.
func startInCgroup(t *testing.T, dir, name string, args ...string) *exec.Cmd {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// BenchmarkTierBCgroup is one tier B call of /usr/bin/true without and with
// a cgroup leaf: what the leaf (make, start into, kill, wait, read, remove)
// adds to a call.
func BenchmarkTierBCgroup(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{CgroupsOff, CgroupsRequired} {
		b.Run(mode, func(b *testing.B) {
			root := b.TempDir()
			// The sandbox uid must traverse to its workspace.
			for d := root; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o711); err != nil {
					b.Fatal(err)
				}
			}
			tool, err := New(Config{Tier: "B", Self: self, WorkspaceRoot: filepath.Join(root, "ws"), Cgroups: mode,
				Policy:        procinput.Policy{AllowedExecutables: []string{"true"}, EgressMode: procinput.EgressNone},
				CgroupOptions: cgroup.Options{Name: fmt.Sprintf("exlbench-pr-%d", os.Getpid())}})
			if err != nil {
				b.Fatal(err)
			}
			c := call("bench", `{"command":"true"}`)
			for range b.N {
				if res := tool.Run(context.Background(), c); res.ErrorKind != "" {
					b.Fatalf("%s: %s", res.ErrorKind, res.Error)
				}
			}
			if m := tool.cfg.cgroups.m; m != nil {
				b.StopTimer()
				_ = syscall.Rmdir(m.Path())
			}
		})
	}
}
