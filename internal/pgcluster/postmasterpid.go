//go:build unix

package pgcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// postmasterPID is the content of a data directory's postmaster.pid lock
// file, whose lines are: pid, data directory, start time, port, socket
// directory, listen address, shared memory key and (since PostgreSQL 10)
// status ("starting", "ready", "stopping", "standby").
type postmasterPID struct {
	pid    int
	port   int
	status string
}

// readPostmasterPID reads dir/postmaster.pid; ok is false when it does not
// exist or is still being written.
func readPostmasterPID(dir string) (p postmasterPID, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return postmasterPID{}, false, nil
	}
	if err != nil {
		return postmasterPID{}, false, fmt.Errorf("pgcluster: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	line := func(i int) string {
		if i < len(lines) {
			return strings.TrimSpace(lines[i])
		}
		return ""
	}
	pid, err := strconv.Atoi(line(0))
	if err != nil || pid <= 0 {
		return postmasterPID{}, false, nil
	}
	port, _ := strconv.Atoi(line(3))
	return postmasterPID{pid: pid, port: port, status: line(7)}, true, nil
}

// runningIn reports whether the postmaster recorded in the data directory's
// postmaster.pid is alive: the pid exists, is a postgres process and (when
// /proc lets us see it) has the data directory as working directory. A
// stale file left by a crash returns nil; postgres itself replaces it on
// start (we never delete it: postgres uses its shared memory key to detect
// orphaned backends of a killed postmaster).
func runningIn(d dataDir) (*AlreadyRunningError, error) {
	p, ok, err := readPostmasterPID(d.path)
	if err != nil || !ok {
		return nil, err
	}
	if err := syscall.Kill(p.pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, nil // no such process: stale
	}
	if !isPostmasterOf(p.pid, d.path) {
		return nil, nil
	}
	return &AlreadyRunningError{DataDir: d.path, PID: p.pid, Port: p.port}, nil
}

// isPostmasterOf reports whether the live process pid is a postgres process
// working in dataDir. When /proc does not tell (another OS, hidden pid), it
// answers true: better a clear error than two postmasters on one directory.
func isPostmasterOf(pid int, dataDir string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	comm, err := os.ReadFile(proc + "/comm")
	if err != nil {
		return true
	}
	switch strings.TrimSpace(string(comm)) {
	case "postgres", "postmaster":
	default:
		return false // the pid was reused by another program
	}
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return true // another user's process: cannot tell
	}
	want, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		want = dataDir
	}
	return cwd == want
}
