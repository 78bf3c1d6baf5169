//go:build linux

package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// owner names one process for the life of the machine.
type owner struct {
	pid       int
	startTime uint64 // clock ticks after boot, /proc/<pid>/stat field 22
}

// dirName is the owner directory's name: x-<pid>-<starttime>.
func (o owner) dirName() string {
	return fmt.Sprintf("x-%d-%d", o.pid, o.startTime)
}

// parseOwner reads an owner directory's name; ok is false for a name this
// package did not make.
func parseOwner(name string) (owner, bool) {
	rest, ok := strings.CutPrefix(name, "x-")
	if !ok {
		return owner{}, false
	}
	p, s, ok := strings.Cut(rest, "-")
	if !ok {
		return owner{}, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != p {
		return owner{}, false
	}
	st, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(st, 10) != s {
		return owner{}, false
	}
	return owner{pid: pid, startTime: st}, true
}

// procStat is the part of /proc/<pid>/stat owners need.
type procStat struct {
	state     byte
	startTime uint64
}

// readProcStat parses /proc/<pid>/stat ("self" for the caller). comm, the
// second field, may hold spaces and parentheses, so fields are counted
// from the last ')'.
func readProcStat(pid string) (procStat, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%s/stat: no command field", pid)
	}
	// After ')': state is field 3, starttime field 22.
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%s/stat: %d fields", pid, len(f)+2)
	}
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%s/stat: start time: %w", pid, err)
	}
	return procStat{state: f[0][0], startTime: st}, nil
}

// self is the calling process as an owner.
func self() (owner, error) {
	st, err := readProcStat("self")
	if err != nil {
		return owner{}, err
	}
	return owner{pid: os.Getpid(), startTime: st.startTime}, nil
}

// alive reports whether o's process still runs: its pid exists, is not a
// zombie, and started when o says. An error other than a missing process
// counts as alive, so a sweep never kills what it could not judge.
func (o owner) alive() bool {
	st, err := readProcStat(strconv.Itoa(o.pid))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		return true
	}
	return st.startTime == o.startTime && st.state != 'Z' && st.state != 'X'
}
