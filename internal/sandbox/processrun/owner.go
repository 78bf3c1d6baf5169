//go:build linux

package processrun

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// identity names a process on a host in a way that survives pid reuse:
// the host, its boot, the pid and the pid's start time in clock ticks
// since boot (/proc/<pid>/stat field 22). A process is the one named
// exactly when all four match.
type identity struct {
	host  string
	boot  string
	pid   int
	start uint64
}

// String is "<host>/<boot id>/<pid>/<start ticks>", as stored in
// ledger.processes.owner.
func (id identity) String() string {
	return fmt.Sprintf("%s/%s/%d/%d", id.host, id.boot, id.pid, id.start)
}

// parseIdentity reverses String.
func parseIdentity(s string) (identity, error) {
	f := strings.Split(s, "/")
	if len(f) != 4 {
		return identity{}, fmt.Errorf("owner %q is not host/boot/pid/start", s)
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 0 {
		return identity{}, fmt.Errorf("owner %q: bad pid", s)
	}
	start, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil {
		return identity{}, fmt.Errorf("owner %q: bad start time", s)
	}
	return identity{host: f[0], boot: f[1], pid: pid, start: start}, nil
}

// selfIdentity is the calling process's identity.
func selfIdentity() (identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return identity{}, err
	}
	host = strings.ReplaceAll(host, "/", "_")
	boot, err := bootID()
	if err != nil {
		return identity{}, err
	}
	pid := os.Getpid()
	start, err := pidStart(pid)
	if err != nil {
		return identity{}, err
	}
	return identity{host: host, boot: boot, pid: pid, start: start}, nil
}

// bootID is the kernel's random id of this boot.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" || strings.Contains(id, "/") {
		return "", errors.New("boot id: unreadable")
	}
	return id, nil
}

// pidStart reads pid's start time in clock ticks since boot (field 22).
func pidStart(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}

// alive reports whether the process pid that started at start still
// exists on this boot (a zombie counts as alive: it has not been reaped).
func alive(pid int, start uint64) bool {
	s, err := pidStart(pid)
	return err == nil && s == start
}
