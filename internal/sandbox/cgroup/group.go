//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are what New sets on a leaf; a zero field sets nothing.
type Limits struct {
	// MemoryMax is memory.max in bytes: past it the kernel reclaims, then
	// the OOM killer ends the whole leaf (memory.oom.group is set to 1).
	MemoryMax int64
	// PidsMax is pids.max: fork and clone fail with EAGAIN past it. It
	// counts the processes and threads of this leaf only, unlike
	// RLIMIT_NPROC.
	PidsMax int64
	// CPUQuota is the CPU time the leaf may use per CPUPeriod (cpu.max);
	// past it the leaf is throttled, not killed. At least 1ms.
	CPUQuota time.Duration
	// CPUPeriod is cpu.max's period, 100ms when zero; 1ms to 1s.
	CPUPeriod time.Duration
}

func (l Limits) validate() error {
	switch {
	case l.MemoryMax < 0 || l.PidsMax < 0 || l.CPUQuota < 0 || l.CPUPeriod < 0:
		return fmt.Errorf("cgroup: negative limit in %+v", l)
	case l.CPUQuota != 0 && l.CPUQuota < time.Millisecond:
		return fmt.Errorf("cgroup: CPUQuota %s is below 1ms", l.CPUQuota)
	case l.CPUPeriod != 0 && (l.CPUPeriod < time.Millisecond || l.CPUPeriod > time.Second):
		return fmt.Errorf("cgroup: CPUPeriod %s is not between 1ms and 1s", l.CPUPeriod)
	}
	return nil
}

// Group is one leaf: start processes in it with FD, end them with Kill,
// then Remove it.
type Group struct {
	m       *Manager
	name    string
	dir     string
	kill    string
	ctrl    []string
	applied map[string]string // interface file -> value written
	skipped map[string]string // interface file -> why not

	mu      sync.Mutex
	fd      int
	removed bool
}

// open opens the leaf's descriptor and sets l.
func (g *Group) open(l Limits) error {
	fd, err := unix.Open(g.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cgroup: open %s: %w", g.dir, err)
	}
	g.fd = fd
	have, err := readWords(g.dir, "cgroup.controllers")
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	for _, c := range wanted {
		if slices.Contains(have, c) {
			g.ctrl = append(g.ctrl, c)
		}
	}
	return g.apply(l)
}

// apply writes l's interface files for the controllers the leaf has.
func (g *Group) apply(l Limits) error {
	if l.MemoryMax > 0 {
		if err := g.set("memory", "memory.max", strconv.FormatInt(l.MemoryMax, 10)); err != nil {
			return err
		}
		// So the OOM killer ends the whole tree, not one process of it.
		err := g.set("memory", "memory.oom.group", "1")
		if errors.Is(err, fs.ErrNotExist) {
			g.skipped["memory.oom.group"] = "this kernel has no memory.oom.group"
		} else if err != nil {
			return err
		}
	}
	if l.PidsMax > 0 {
		if err := g.set("pids", "pids.max", strconv.FormatInt(l.PidsMax, 10)); err != nil {
			return err
		}
	}
	if l.CPUQuota > 0 {
		period := l.CPUPeriod
		if period == 0 {
			period = 100 * time.Millisecond
		}
		v := fmt.Sprintf("%d %d", l.CPUQuota.Microseconds(), period.Microseconds())
		if err := g.set("cpu", "cpu.max", v); err != nil {
			return err
		}
	}
	return nil
}

// set writes value to file when the leaf has controller c, and records
// what it did.
func (g *Group) set(c, file, value string) error {
	if !slices.Contains(g.ctrl, c) {
		why, ok := g.m.missing[c]
		if !ok {
			why = "not enabled for this leaf"
		}
		g.skipped[file] = "the " + c + " controller is unavailable: " + why
		return nil
	}
	if err := writeFile(g.dir, file, value); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	g.applied[file] = value
	return nil
}

// Name is the leaf's name.
func (g *Group) Name() string { return g.name }

// Path is the leaf's directory.
func (g *Group) Path() string { return g.dir }

// FD is an O_PATH descriptor of the leaf, for syscall.SysProcAttr's
// UseCgroupFD and CgroupFD: the child starts inside the leaf. It is valid
// until Remove.
func (g *Group) FD() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fd
}

// Procs lists the processes in the leaf now.
func (g *Group) Procs() ([]int, error) { return procs(g.dir) }

// Kill SIGKILLs every process in the leaf (see the package documentation
// for the mechanisms) without waiting for them to exit: WaitEmpty does.
// Killing an empty or removed leaf does nothing.
func (g *Group) Kill() error { return g.m.killDir(g.dir, g.kill) }

// WaitEmpty returns when no process is left in the leaf, or with an error
// when ctx ends first.
func (g *Group) WaitEmpty(ctx context.Context) error { return waitEmpty(ctx, g.dir) }

// Remove closes the descriptor and removes the leaf, which must be empty
// (Kill, WaitEmpty). It may be called again after a failure.
func (g *Group) Remove() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return nil
	}
	g.closeFDLocked()
	if err := removeTree(g.dir); err != nil {
		return fmt.Errorf("cgroup: remove leaf: %w", err)
	}
	g.removed = true
	g.m.leafGone()
	return nil
}

func (g *Group) closeFD() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeFDLocked()
}

func (g *Group) closeFDLocked() {
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
}

// Stats are a leaf's resource figures, over every process that ever ran in
// it. A figure the kernel does not report for this leaf is -1.
type Stats struct {
	// CPUUsage, CPUUser and CPUSystem are cpu.stat's usage_usec,
	// user_usec and system_usec, present whatever the controllers.
	CPUUsage, CPUUser, CPUSystem time.Duration
	// MemoryPeak is memory.peak in bytes (memory controller, Linux 5.19).
	MemoryPeak int64
	// OOMKills is memory.events' oom_kill.
	OOMKills int64
	// PidsPeak is pids.peak (pids controller, Linux 6.1).
	PidsPeak int64
	// PidsDenied is pids.events' max: forks refused by pids.max.
	PidsDenied int64
}

// Stats reads the leaf's figures; call it before Remove.
func (g *Group) Stats() (Stats, error) {
	s := Stats{MemoryPeak: -1, OOMKills: -1, PidsPeak: -1, PidsDenied: -1}
	cpu, err := readKeyed(g.dir, "cpu.stat")
	if err != nil {
		return s, fmt.Errorf("cgroup: %w", err)
	}
	s.CPUUsage = time.Duration(cpu["usage_usec"]) * time.Microsecond
	s.CPUUser = time.Duration(cpu["user_usec"]) * time.Microsecond
	s.CPUSystem = time.Duration(cpu["system_usec"]) * time.Microsecond
	if slices.Contains(g.ctrl, "memory") {
		if v, err := readInt(g.dir, "memory.peak"); err == nil {
			s.MemoryPeak = v
		}
		if ev, err := readKeyed(g.dir, "memory.events"); err == nil {
			s.OOMKills = ev["oom_kill"]
		}
	}
	if slices.Contains(g.ctrl, "pids") {
		if v, err := readInt(g.dir, "pids.peak"); err == nil {
			s.PidsPeak = v
		}
		if ev, err := readKeyed(g.dir, "pids.events"); err == nil {
			s.PidsDenied = ev["max"]
		}
	}
	return s, nil
}

// Record describes the leaf for an enforcement record: version 2, its
// cgroup path and mount, the controllers it has, the limits written
// (interface file -> value), the limits skipped and why, and the kill
// mechanism.
func (g *Group) Record() map[string]any {
	limits := make(map[string]string, len(g.applied))
	for k, v := range g.applied {
		limits[k] = v
	}
	rec := map[string]any{
		"version":     2,
		"path":        g.m.cgroupPath(g.dir),
		"mount":       g.m.mnt.dir,
		"controllers": append([]string{}, g.ctrl...),
		"limits":      limits,
		"kill":        g.kill,
	}
	if len(g.skipped) > 0 {
		skipped := make(map[string]string, len(g.skipped))
		for k, v := range g.skipped {
			skipped[k] = v
		}
		rec["limits_not_applied"] = skipped
	}
	return rec
}
