//go:build linux

package processrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/internal/sandbox/cgroup"
)

// Both tiers in cgroup v2 (internal/sandbox/cgroup).
//
// Where the host has a cgroup2 hierarchy the daemon may write, every
// process this tool starts — tier B's init and all it starts, tier C's
// bubblewrap and everything in its sandbox — begins life in a leaf of its
// own, through clone3's CLONE_INTO_CGROUP. When that process exits, for
// whatever reason — the program ended, the call was stopped, or the
// process itself was SIGKILLed — the leaf is killed with cgroup.kill, so
// descendants that left the process group and were not reparented to the
// init die too; then the leaf is removed. A leaf left behind by an
// executor that died is found by Tool.SweepOrphans, which the next
// executor on the host runs when it starts: this is what ends a tier C
// sandbox that bubblewrap was still setting up when its executor died
// (its pid 1 then waits for a monitor that is gone, and no
// parent-death signal reaches it; see sandboxinit.go). Memory, pids and
// cpu limits (Config.CgroupLimits) are set for the controllers the
// hierarchy offers; the rlimits apply in every case. On a hybrid host the
// cgroup2 hierarchy usually offers none of those controllers: the leaf
// then gives the kill, the sweep and the CPU figures, and the enforcement
// record lists the limits it could not set.

// Modes of Config.Cgroups.
const (
	// CgroupsAuto uses cgroup v2 where available and records why not
	// otherwise.
	CgroupsAuto = "auto"
	// CgroupsRequired makes New fail without cgroup v2.
	CgroupsRequired = "required"
	// CgroupsOff never uses cgroups.
	CgroupsOff = "off"
)

// DefaultCgroupLimits are the leaf limits of a zero Config.CgroupLimits.
var DefaultCgroupLimits = cgroup.Limits{MemoryMax: 512 << 20, PidsMax: 256}

// leafTimeout bounds the wait for a killed leaf to empty.
const leafTimeout = 5 * time.Second

// cgroupState is the tool's resolved use of cgroups.
type cgroupState struct {
	m *cgroup.Manager // nil: not used
	// why is the enforcement record's "cgroup" when m is nil.
	why    string
	limits cgroup.Limits
}

// cgroupDefaults fills the cgroup fields of cfg and opens its cgroup
// manager; New calls it.
func (cfg *Config) cgroupDefaults() error {
	if cfg.CgroupLimits == (cgroup.Limits{}) {
		cfg.CgroupLimits = DefaultCgroupLimits
	}
	switch cfg.Cgroups {
	case "":
		cfg.Cgroups = CgroupsAuto
	case CgroupsAuto, CgroupsRequired:
	case CgroupsOff:
		cfg.cgroups = &cgroupState{why: "off: disabled by configuration"}
		return nil
	default:
		return fmt.Errorf("processrun: Cgroups %q is not auto, required or off", cfg.Cgroups)
	}
	m, err := cgroup.Open(cfg.CgroupOptions)
	switch {
	case errors.Is(err, cgroup.ErrUnavailable) && cfg.Cgroups == CgroupsAuto:
		cfg.cgroups = &cgroupState{why: "unavailable: " + err.Error()}
		return nil
	case err != nil:
		return fmt.Errorf("processrun: cgroups: %w", err)
	}
	cfg.cgroups = &cgroupState{m: m, limits: cfg.CgroupLimits}
	return nil
}

// SweepOrphans kills and removes the cgroup leaves of processes whose
// executor died (see cgroup.Manager.Sweep), of either tier; the daemon
// calls it when it starts. Without cgroups there is nothing to sweep.
func (t *Tool) SweepOrphans(ctx context.Context) ([]cgroup.Orphan, error) {
	if t.cfg.cgroups == nil || t.cfg.cgroups.m == nil {
		return nil, nil
	}
	return t.cfg.cgroups.m.Sweep(ctx)
}

// leaf is the cgroup of one process this tool starts (tier B's init, tier
// C's bubblewrap). A nil *leaf (cgroups unused) does nothing.
type leaf struct {
	g   *cgroup.Group
	enf map[string]any // the launch's enforcement record
	// exited is closed once the exit watcher has killed the leaf.
	exited <-chan struct{}
	// killed are the processes the watcher found in the leaf.
	killed []int
}

// newLeaf makes the leaf of one process and records it, or why there is
// none, as enf["cgroup"].
func (t *Tool) newLeaf(enf map[string]any) (*leaf, error) {
	cs := t.cfg.cgroups
	if cs == nil || cs.m == nil {
		why := "off"
		if cs != nil {
			why = cs.why
		}
		enf["cgroup"] = why
		return nil, nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	g, err := cs.m.New("p-"+hex.EncodeToString(b[:]), cs.limits)
	if err != nil {
		enf["cgroup"] = "failed: " + err.Error()
		return nil, err
	}
	enf["cgroup"] = g.Record()
	return &leaf{g: g, enf: enf}, nil
}

// attach makes cmd start inside the leaf.
func (l *leaf) attach(cmd *exec.Cmd) {
	if l == nil {
		return
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = l.g.FD()
}

// started watches the started pid (tier B's init, tier C's bubblewrap):
// when it exits, the leaf is killed at once, before the caller reaps it, so
// no survivor holds the output pipes open.
func (l *leaf) started(pid int) {
	if l == nil {
		return
	}
	l.exited = watchExit(pid, func() {
		l.killed, _ = l.g.Procs()
		_ = l.g.Kill()
	})
}

// abort removes the leaf of a process that never started.
func (l *leaf) abort() {
	if l == nil {
		return
	}
	_ = l.release()
}

// finish kills what is left in the leaf, reads its figures into res,
// removes it and records how that went.
func (l *leaf) finish(res map[string]int64) {
	if l == nil {
		return
	}
	if l.exited != nil {
		<-l.exited
	}
	// Processes the watcher killed may still be listed while they exit.
	killed := map[int]bool{}
	pids, _ := l.g.Procs()
	for _, pid := range append(l.killed, pids...) {
		killed[pid] = true
	}
	res["cgroup_procs_killed"] = int64(len(killed))
	err := l.empty()
	if s, serr := l.g.Stats(); serr == nil {
		addCgroupStats(res, s)
	}
	if err == nil {
		err = l.g.Remove()
	}
	// A new map: a background process's start Result shares the old one.
	rec := map[string]any{}
	if old, ok := l.enf["cgroup"].(map[string]any); ok {
		for k, v := range old {
			rec[k] = v
		}
	}
	if err != nil {
		rec["release_error"] = err.Error()
	} else {
		rec["released"] = "killed, emptied and removed"
	}
	l.enf["cgroup"] = rec
}

// release kills the leaf, waits for it to empty and removes it.
func (l *leaf) release() error {
	if err := l.empty(); err != nil {
		return err
	}
	return l.g.Remove()
}

// empty kills the leaf and waits, at most leafTimeout, for it to empty.
func (l *leaf) empty() error {
	if err := l.g.Kill(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), leafTimeout)
	defer cancel()
	return l.g.WaitEmpty(ctx)
}

func addCgroupStats(res map[string]int64, s cgroup.Stats) {
	res["cgroup_cpu_usage_usec"] = s.CPUUsage.Microseconds()
	res["cgroup_cpu_user_usec"] = s.CPUUser.Microseconds()
	res["cgroup_cpu_system_usec"] = s.CPUSystem.Microseconds()
	for k, v := range map[string]int64{"cgroup_memory_peak_bytes": s.MemoryPeak, "cgroup_oom_kills": s.OOMKills,
		"cgroup_pids_peak": s.PidsPeak, "cgroup_pids_denied": s.PidsDenied} {
		if v >= 0 {
			res[k] = v
		}
	}
}

// watchExit calls onExit, on a goroutine of its own, once the process pid
// has exited, and closes the returned channel after it. pid must be a child
// that nobody has waited for yet, so that it cannot be reused meanwhile. If
// the process cannot be watched, the channel is closed at once and onExit
// never runs.
func watchExit(pid int, onExit func()) <-chan struct{} {
	done := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		defer unix.Close(fd)
		// A pidfd polls readable when its process has exited.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err == nil && n > 0 {
				onExit()
			}
			return
		}
	}()
	return done
}
