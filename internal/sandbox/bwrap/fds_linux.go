package bwrap

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/internal/sandbox/fdmark"
)

// inheritNothing marks every descriptor of the calling process above 2
// close-on-exec. bubblewrap hands every descriptor it inherits on to the
// program, so one the daemon itself inherited without close-on-exec (from
// a shell, a service manager, go test) would reach the sandbox. Marking
// changes nothing for the daemon, and exec.Cmd's ExtraFiles, which it
// duplicates into place in the child, still arrive.
func inheritNothing() error { return fdmark.AboveStdio() }

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
