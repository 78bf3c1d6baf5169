package procinit

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/internal/sandbox/fdmark"
)

// closeOnExecAbove marks every descriptor above 2 close-on-exec, so the
// target inherits only stdio.
func closeOnExecAbove() error { return fdmark.AboveStdio() }

// openFD returns descriptor fd as a file, or nil when it is not open.
func openFD(fd int, name string) *os.File {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), name)
}
