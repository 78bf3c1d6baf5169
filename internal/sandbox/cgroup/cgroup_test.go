//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var parents atomic.Int64

// newManager opens a Manager whose parent belongs to this test alone, and
// clears it away afterwards. No cgroup2 hierarchy is a failure: the
// machines these tests run on have one.
func newManager(t *testing.T) *Manager {
	t.Helper()
	name := fmt.Sprintf("exltest-%d-%d", os.Getpid(), parents.Add(1))
	m, err := Open(Options{Name: name})
	if err != nil {
		t.Fatalf("cgroup v2 is needed by this test: %v", err)
	}
	t.Cleanup(func() {
		_ = m.killDir(m.root, m.kill)
		ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
		defer cancel()
		_ = waitEmpty(ctx, m.root)
		if err := removeTree(m.root); err != nil {
			t.Errorf("clear %s: %v", m.root, err)
		}
	})
	return m
}

// startIn starts name args inside the cgroup open at fd, and reaps it
// when the test ends.
func startIn(t *testing.T, fd int, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s in a cgroup: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// pidsOf lists the running (not zombie) processes whose command line
// contains marker.
func pidsOf(marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if st, err := readProcStat(e.Name()); err == nil && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// waitFor polls cond for up to 2 minutes: a bound for a hang, not for a
// machine busy with other work.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func marker(t *testing.T, n int) string {
	return fmt.Sprintf("%d.%d%d", n, os.Getpid()%100000, parents.Load())
}

// TestKillReachesWholeTree: a tree with a setsid child and a double-fork
// daemon, started into a leaf, dies entirely of Kill, whichever mechanism
// it uses.
func TestKillReachesWholeTree(t *testing.T) {
	m := newManager(t)
	if m.KillMechanism() != KillFile {
		t.Errorf("kill mechanism %q on a kernel with cgroup.kill", m.KillMechanism())
	}
	for _, mech := range []string{KillFile, KillFreeze, KillSignal} {
		t.Run(mech, func(t *testing.T) {
			g, err := m.New("tree-"+strings.NewReplacer(".", "_", "+", "_").Replace(mech), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			g.kill = mech
			setsidMark, daemonMark, childMark := marker(t, 301), marker(t, 302), marker(t, 303)
			script := fmt.Sprintf("setsid sleep %s & (setsid sh -c 'sleep %s & exit' &); sleep %s", setsidMark, daemonMark, childMark)
			cmd := startIn(t, g.FD(), "sh", "-c", script)
			var all []int
			waitFor(t, "the tree to start", func() bool {
				all = nil
				for _, mk := range []string{setsidMark, daemonMark, childMark} {
					all = append(all, pidsOf("sleep\x00"+mk)...)
				}
				return len(all) == 3
			})
			inLeaf, err := g.Procs()
			if err != nil {
				t.Fatal(err)
			}
			for _, pid := range append(all, cmd.Process.Pid) {
				if !slices.Contains(inLeaf, pid) {
					t.Errorf("pid %d is not in the leaf (%v)", pid, inLeaf)
				}
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := g.WaitEmpty(ctx); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			for _, mk := range []string{setsidMark, daemonMark, childMark} {
				if p := pidsOf("sleep\x00" + mk); len(p) > 0 {
					t.Errorf("sleep %s survived the kill: %v", mk, p)
				}
			}
			if err := g.Remove(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(g.Path()); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("leaf still there: %v", err)
			}
		})
	}
}

// TestStartsInsideLeaf: UseCgroupFD puts the child in the leaf from its
// first instruction.
func TestStartsInsideLeaf(t *testing.T) {
	m := newManager(t)
	g, err := m.New("inside", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = g.Kill()
		_ = g.WaitEmpty(context.Background())
		_ = g.Remove()
	}()
	cmd := exec.Command("cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	cg, ok := parseProcCgroup(out)
	if want := m.cgroupPath(g.Path()); !ok || cg != want {
		t.Errorf("child's cgroup %q, want %q", cg, want)
	}
}

func TestStatsReportCPU(t *testing.T) {
	m := newManager(t)
	g, err := m.New("cpu", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, g.FD(), "sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUsage <= 0 || s.CPUUser <= 0 || s.CPUUsage < s.CPUUser {
		t.Errorf("stats %+v: no CPU use recorded", s)
	}
	if !slices.Contains(m.Controllers(), "memory") && s.MemoryPeak != -1 {
		t.Errorf("memory peak %d without the memory controller", s.MemoryPeak)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestLimitsOnlyWhereControllersAre: every limit is either written (its
// controller is enabled) or listed as not applied with a reason, never
// claimed without being set.
func TestLimitsOnlyWhereControllersAre(t *testing.T) {
	m := newManager(t)
	l := Limits{MemoryMax: 64 << 20, PidsMax: 32, CPUQuota: 50 * time.Millisecond}
	g, err := m.New("limits", l)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	rec := g.Record()
	limits := rec["limits"].(map[string]string)
	skipped, _ := rec["limits_not_applied"].(map[string]string)
	for file, c := range map[string]string{"memory.max": "memory", "pids.max": "pids", "cpu.max": "cpu"} {
		if slices.Contains(m.Controllers(), c) {
			b, err := os.ReadFile(filepath.Join(g.Path(), file))
			if err != nil || limits[file] == "" || !strings.HasPrefix(string(b), strings.Fields(limits[file])[0]) {
				t.Errorf("%s: recorded %q, file %q (%v)", file, limits[file], b, err)
			}
			continue
		}
		if _, ok := limits[file]; ok {
			t.Errorf("%s recorded as applied without the %s controller", file, c)
		}
		if !strings.Contains(skipped[file], c+" controller is unavailable") {
			t.Errorf("%s: not-applied reason %q", file, skipped[file])
		}
		if m.MissingControllers()[c] == "" {
			t.Errorf("no reason recorded for the missing %s controller", c)
		}
	}
	if rec["version"] != 2 || rec["kill"] != KillFile || rec["path"] != m.cgroupPath(g.Path()) {
		t.Errorf("record %v", rec)
	}
	if _, err := m.New("bad", Limits{CPUQuota: time.Microsecond}); err == nil {
		t.Error("New accepted a 1µs CPU quota")
	}
	if _, err := m.New("a/b", Limits{}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("New with name a/b: %v", err)
	}
	if _, err := m.New("limits", Limits{}); err == nil {
		t.Error("New made a leaf twice")
	}
}

// TestOwnerDirectoryLifetime: the owner directory exists while a leaf
// does, and Close refuses while one is open.
func TestOwnerDirectoryLifetime(t *testing.T) {
	m := newManager(t)
	if !strings.HasSuffix(m.Owner(), fmt.Sprintf("/x-%d-%d", os.Getpid(), m.self.startTime)) {
		t.Errorf("owner %s", m.Owner())
	}
	g, err := m.New("one", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Owner()); err != nil {
		t.Fatalf("owner directory: %v", err)
	}
	if err := m.Close(); err == nil {
		t.Error("Close succeeded with a leaf open")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, err := os.Stat(m.Owner()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("owner directory after the last leaf: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
}

// deadOwnerLeaf makes the leaf of an owner directory named by hand and
// starts a sleep in it.
func deadOwnerLeaf(t *testing.T, m *Manager, owner, leaf, mark string) *exec.Cmd {
	t.Helper()
	dir := filepath.Join(m.root, owner, leaf)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	return startIn(t, fd, "sleep", mark)
}

// TestSweep: leaves of dead owners (a pid that does not exist, a live pid
// with another start time) are killed and removed; a live owner's leaves
// and our own are left alone, as are directories Sweep did not name.
func TestSweep(t *testing.T) {
	m := newManager(t)
	pidMax, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	max, _ := strconv.Atoi(strings.TrimSpace(string(pidMax)))
	gone := owner{pid: max + 1, startTime: 1}.dirName()
	reused := owner{pid: os.Getpid(), startTime: m.self.startTime + 1}.dirName()

	liveProc := exec.Command("sleep", marker(t, 310))
	if err := liveProc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = liveProc.Process.Kill(); _ = liveProc.Wait() }()
	st, err := readProcStat(strconv.Itoa(liveProc.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	live := owner{pid: liveProc.Process.Pid, startTime: st.startTime}.dirName()

	a := deadOwnerLeaf(t, m, gone, "a", marker(t, 311))
	b := deadOwnerLeaf(t, m, reused, "b", marker(t, 312))
	c := deadOwnerLeaf(t, m, live, "c", marker(t, 313))
	if err := os.MkdirAll(filepath.Join(m.root, "not-ours", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	mine, err := m.New("mine", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	own := startIn(t, mine.FD(), "sleep", marker(t, 314))

	found, err := m.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{gone + "/a": a.Process.Pid, reused + "/b": b.Process.Pid}
	if len(found) != len(want) {
		t.Errorf("found %+v, want %v", found, want)
	}
	for _, o := range found {
		pid, ok := want[o.Owner+"/"+o.Leaf]
		if !ok || !slices.Equal(o.PIDs, []int{pid}) {
			t.Errorf("orphan %+v, want one of %v", o, want)
		}
	}
	for _, cmd := range []*exec.Cmd{a, b} {
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("orphan %d ended with %v, want SIGKILL", cmd.Process.Pid, err)
		}
	}
	for _, d := range []string{gone, reused} {
		if _, err := os.Stat(filepath.Join(m.root, d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("dead owner %s not removed: %v", d, err)
		}
	}
	for _, d := range []string{filepath.Join(live, "c"), "not-ours/d", filepath.Join(m.self.dirName(), "mine")} {
		if _, err := os.Stat(filepath.Join(m.root, d)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	for _, cmd := range []*exec.Cmd{c, own} {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("process %d of a live owner was killed: %v", cmd.Process.Pid, err)
		}
	}
	_ = mine.Kill()
	_ = mine.WaitEmpty(context.Background())
	if err := mine.Remove(); err != nil {
		t.Error(err)
	}
}

// BenchmarkLeafLifecycle is what a leaf adds to one sandboxed call, without
// the process: make it (owner directory included), kill it, wait for it to
// be empty, read its figures and remove it.
func BenchmarkLeafLifecycle(b *testing.B) {
	m, err := Open(Options{Name: fmt.Sprintf("exlbench-%d", os.Getpid())})
	if err != nil {
		b.Fatalf("cgroup v2 is needed: %v", err)
	}
	defer removeTree(m.root)
	ctx := context.Background()
	for i := range b.N {
		g, err := m.New("leaf-"+strconv.Itoa(i), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Kill(); err != nil {
			b.Fatal(err)
		}
		if err := g.WaitEmpty(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Stats(); err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}
