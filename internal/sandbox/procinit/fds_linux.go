package procinit

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeOnExecAbove marks every descriptor above 2 close-on-exec, so the
// target inherits only stdio. Marking instead of closing keeps valid the
// descriptors the Go runtime of the init may hold; the effect on the target
// is the same. It uses close_range(CLOSE_RANGE_CLOEXEC) and falls back to
// /proc/self/fd on kernels older than 5.11.
func closeOnExecAbove() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("mark descriptors close-on-exec: close_range: %v; %w", err, rerr)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The descriptor ReadDir used is closed by now: EBADF is fine.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

// openFD returns descriptor fd as a file, or nil when it is not open.
func openFD(fd int, name string) *os.File {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), name)
}
