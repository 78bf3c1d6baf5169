// Package fdmark marks a process's descriptors close-on-exec, so that a
// program it starts inherits only what it is handed on purpose.
package fdmark

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// AboveStdio marks every descriptor of the calling process above 2
// close-on-exec. Marking rather than closing keeps valid the descriptors
// the caller (and the Go runtime) still use; a child started afterwards
// gets stdio and whatever exec.Cmd's ExtraFiles duplicate into place. It
// uses close_range(CLOSE_RANGE_CLOEXEC) and falls back to /proc/self/fd on
// kernels older than 5.11.
func AboveStdio() error {
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
