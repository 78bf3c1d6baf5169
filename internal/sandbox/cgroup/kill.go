//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// killTimeout bounds the kill passes of the fallback mechanisms, and a
// sweep's wait for one leaf to empty: a process in uninterruptible sleep
// cannot die until it wakes.
const killTimeout = 5 * time.Second

// killDir SIGKILLs every process in the cgroup dir and below it with mech.
// A removed cgroup has nothing to kill.
func (m *Manager) killDir(dir, mech string) error {
	switch mech {
	case KillFile:
		err := writeFile(dir, "cgroup.kill", "1")
		if errors.Is(err, fs.ErrNotExist) && !exists(dir) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cgroup: kill: %w", err)
		}
		return nil
	case KillFreeze:
		return m.signalKill(dir, true)
	default:
		return m.signalKill(dir, false)
	}
}

func exists(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}

// signalKill SIGKILLs each process of the cgroup dir, freezing it during
// the pass when freeze is set so that nothing forks meanwhile, and repeats
// until the cgroup is empty or killTimeout has passed.
func (m *Manager) signalKill(dir string, freeze bool) error {
	deadline := time.Now().Add(killTimeout)
	cg := m.cgroupPath(dir)
	for {
		if freeze {
			if err := writeFile(dir, "cgroup.freeze", "1"); err != nil {
				if !exists(dir) {
					return nil
				}
				return fmt.Errorf("cgroup: freeze: %w", err)
			}
			waitFrozen(dir, 100*time.Millisecond)
		}
		pids, err := procs(dir)
		if err != nil {
			return fmt.Errorf("cgroup: kill: %w", err)
		}
		for _, pid := range pids {
			killIn(pid, cg)
		}
		if freeze {
			// A frozen process still dies of SIGKILL; thawing lets any
			// process we missed run into the next pass.
			if err := writeFile(dir, "cgroup.freeze", "0"); err != nil && exists(dir) {
				return fmt.Errorf("cgroup: thaw: %w", err)
			}
		}
		pass := time.Now().Add(50 * time.Millisecond)
		if pass.After(deadline) {
			pass = deadline
		}
		ctx, cancel := context.WithDeadline(context.Background(), pass)
		err = waitEmpty(ctx, dir)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %s still holds processes after %s of kill passes", dir, killTimeout)
		}
	}
}

// waitFrozen waits up to d for cgroup.events to say "frozen 1".
func waitFrozen(dir string, d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		if ev, err := readKeyed(dir, "cgroup.events"); err != nil || ev["frozen"] == 1 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// killIn SIGKILLs pid if it is still in cgroup cg (or below it). A pidfd
// pins the process while its cgroup is checked, so a pid reused by a
// process elsewhere is never signalled.
func killIn(pid int, cg string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) && inCgroup(pid, cg) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return
	}
	defer unix.Close(fd)
	if inCgroup(pid, cg) {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// inCgroup reports whether /proc/<pid>/cgroup puts pid in cg or below it.
func inCgroup(pid int, cg string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	p, ok := parseProcCgroup(data)
	return ok && (p == cg || strings.HasPrefix(p, cg+"/"))
}

// waitEmpty polls the cgroup dir until it holds no process or ctx ends.
func waitEmpty(ctx context.Context, dir string) error {
	delay := time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		busy, err := populated(dir)
		if err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if !busy {
			return nil
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cgroup: %s still holds processes: %w", dir, context.Cause(ctx))
		case <-timer.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}
