package procinit

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// rlimit is one limit apply sets.
type rlimit struct {
	name     string
	resource int
	value    uint64
}

// rlimits lists the limits l sets: RLIMIT_CORE always, the others when
// non-zero.
func (l Limits) rlimits() []rlimit {
	out := []rlimit{{"RLIMIT_CORE", unix.RLIMIT_CORE, 0}}
	add := func(name string, resource int, value uint64) {
		if value != 0 {
			out = append(out, rlimit{name, resource, value})
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
		lim := syscall.Rlimit{Cur: r.value, Max: r.value}
		if err := syscall.Setrlimit(r.resource, &lim); err != nil {
			return fmt.Errorf("set %s to %d: %w", r.name, r.value, err)
		}
	}
	return nil
}
