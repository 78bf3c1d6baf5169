package procinit

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// reapResult is what reapChildren saw.
type reapResult struct {
	target     bool // the target was reaped
	status     unix.WaitStatus
	cpuMS      int64 // the target's user and system time
	noChildren bool  // waitpid reported ECHILD
}

// reapChildren collects every child that has ended, without blocking. The
// target's status is kept; other children are reparented orphans.
func reapChildren(target int) reapResult {
	var res reapResult
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			res.noChildren = true
			return res
		case err != nil || pid == 0:
			return res
		case pid == target:
			res.target, res.status = true, ws
			res.cpuMS = ru.Utime.Nano()/1e6 + ru.Stime.Nano()/1e6
		}
	}
}

// killDescendants SIGKILLs every live descendant of the calling process and
// the process group pgid, and reaps them, until it has no child left or the
// deadline passes. It returns how many distinct processes it found alive
// and killed.
func killDescendants(pgid int, deadline time.Time) int {
	// The init is a subreaper: with no child left there is no descendant
	// left either (an orphan would have been reparented to it), and the
	// scan of every process on the host below can be skipped.
	if reapChildren(0).noChildren {
		return 0
	}
	self := os.Getpid()
	killed := make(map[int]bool)
	for {
		for _, pid := range descendants(self) {
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		// Also catches a process the group's members forked after the scan.
		_ = unix.Kill(-pgid, unix.SIGKILL)
		if reapChildren(0).noChildren || time.Now().After(deadline) {
			return len(killed)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procEntry is the part of /proc/PID/stat descendants needs.
type procEntry struct {
	ppid   int
	zombie bool
}

// descendants lists the live (non-zombie) descendants of root, found by
// walking the parent links of every process in /proc.
func descendants(root int) []int {
	procs := readProcs()
	var out []int
	for pid, e := range procs {
		if e.zombie || pid == root {
			continue
		}
		if isDescendant(procs, pid, root) {
			out = append(out, pid)
		}
	}
	return out
}

func isDescendant(procs map[int]procEntry, pid, root int) bool {
	for range len(procs) { // bounds the walk should /proc change under us
		e, ok := procs[pid]
		if !ok || e.ppid <= 1 {
			return e.ppid == root
		}
		if e.ppid == root {
			return true
		}
		pid = e.ppid
	}
	return false
}

// readProcs reads the parent and state of every process in /proc; processes
// that vanish while it reads are left out.
func readProcs() map[int]procEntry {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make(map[int]procEntry, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pe, ok := readStat(pid); ok {
			procs[pid] = pe
		}
	}
	return procs
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid ...", where comm
// may hold spaces and parentheses, so fields are counted from the last ')'.
func readStat(pid int) (procEntry, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procEntry{}, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 {
		return procEntry{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procEntry{}, false
	}
	return procEntry{ppid: ppid, zombie: string(fields[0]) == "Z"}, true
}
