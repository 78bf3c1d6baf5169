package redact

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime runs f on a thread of its own and returns the CPU time that
// thread spent in it: time the machine gave to other work is not counted.
func cpuTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &before); err != nil {
		panic(err)
	}
	f()
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &after); err != nil {
		panic(err)
	}
	return time.Duration(after.Nano() - before.Nano())
}
