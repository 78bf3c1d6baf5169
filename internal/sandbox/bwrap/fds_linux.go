package bwrap

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// inheritNothing marks every descriptor of the calling process above 2
// close-on-exec. bubblewrap hands every descriptor it inherits on to the
// program, so one the daemon itself inherited without close-on-exec (from
// a shell, a service manager, go test) would reach the sandbox. Marking
// changes nothing for the daemon, and exec.Cmd's ExtraFiles, which it
// duplicates into place in the child, still arrive. It uses
// close_range(CLOSE_RANGE_CLOEXEC) and falls back to /proc/self/fd on
// kernels older than 5.11.
func inheritNothing() error {
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

// blockingPipe returns a close-on-exec pipe in blocking mode, outside Go's
// poller. Its ends are read and written with blocking calls (setLimits) or
// handed to bwrap; registering them with the poller, as os.Pipe does, only
// cost epoll_ctl calls on every sandbox.
func blockingPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
