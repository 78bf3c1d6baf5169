package procinit

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Rlimit is one limit that l sets, soft and hard alike.
type Rlimit struct {
	Name     string // RLIMIT_CORE, RLIMIT_CPU, ...
	Resource int    // the resource number for setrlimit(2)
	Value    uint64
}

// Rlimits lists the limits l sets, in the order it sets them: RLIMIT_CORE
// (0) always, the others when non-zero, RLIMIT_NOFILE raised to 16.
func (l Limits) Rlimits() []Rlimit { return l.rlimits() }

// rlimits lists the limits l sets: RLIMIT_CORE always, the others when
// non-zero.
func (l Limits) rlimits() []Rlimit {
	out := []Rlimit{{"RLIMIT_CORE", unix.RLIMIT_CORE, 0}}
	add := func(name string, resource int, value uint64) {
		if value != 0 {
			out = append(out, Rlimit{name, resource, value})
		}
	}
	add("RLIMIT_CPU", unix.RLIMIT_CPU, l.CPUSeconds)
	add("RLIMIT_AS", unix.RLIMIT_AS, l.AddressSpace)
	add("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, l.FileSize)
	if l.OpenFiles != 0 {
		add("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, max(l.OpenFiles, minOpenFiles))
	}
	add("RLIMIT_NPROC", unix.RLIMIT_NPROC, l.Processes)
	return out
}

// apply sets l on the calling process, soft limit equal to hard. It uses
// package syscall rather than x/sys/unix so that os/exec no longer restores,
// in the children it starts, the RLIMIT_NOFILE the Go runtime raised at
// startup.
func (l Limits) apply() error {
	for _, r := range l.rlimits() {
		lim := syscall.Rlimit{Cur: r.Value, Max: r.Value}
		if err := syscall.Setrlimit(r.Resource, &lim); err != nil {
			return fmt.Errorf("set %s to %d: %w", r.Name, r.Value, err)
		}
	}
	return nil
}

// ApplyTo sets l on the running process pid with prlimit(2), soft limit
// equal to hard, RLIMIT_CORE to 0: what tier C does to bubblewrap's pid 1
// before it forks the program. The caller needs the right to change pid's
// limits (the same uid, or CAP_SYS_RESOURCE) and may only lower a hard
// limit unless it holds CAP_SYS_RESOURCE.
func (l Limits) ApplyTo(pid int) error {
	for _, r := range l.rlimits() {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Prlimit(pid, r.Resource, &lim, nil); err != nil {
			return fmt.Errorf("set %s of process %d to %d: %w", r.Name, pid, r.Value, err)
		}
	}
	return nil
}

// set is the inverse of rlimits for one resource (the wire format's
// decoder): RLIMIT_CORE, always 0, is not a field.
func (l *Limits) set(resource int, value uint64) {
	switch resource {
	case unix.RLIMIT_CPU:
		l.CPUSeconds = value
	case unix.RLIMIT_AS:
		l.AddressSpace = value
	case unix.RLIMIT_FSIZE:
		l.FileSize = value
	case unix.RLIMIT_NOFILE:
		l.OpenFiles = value
	case unix.RLIMIT_NPROC:
		l.Processes = value
	}
}
