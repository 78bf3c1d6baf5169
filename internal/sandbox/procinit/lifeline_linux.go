package procinit

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// errLauncherGone is the init's reason to end early under Spec.Lifeline.
var errLauncherGone = errors.New("the launcher is gone (its end of the lifeline closed)")

// watchLifeline returns a channel closed once every write end of the
// lifeline on descriptor 5 is closed, or nil without a lifeline. The
// descriptor is made non-blocking first, so the watch waits in the
// runtime's poller rather than holding a thread (threads count against
// RLIMIT_NPROC, which the init shares with the target in tier C).
func watchLifeline(on bool) (<-chan struct{}, error) {
	if !on {
		return nil, nil
	}
	if _, err := unix.FcntlInt(lifelineFD, unix.F_GETFD, 0); err != nil {
		return nil, fmt.Errorf("lifeline: descriptor %d is not open", lifelineFD)
	}
	if err := unix.SetNonblock(lifelineFD, true); err != nil {
		return nil, fmt.Errorf("lifeline: %w", err)
	}
	f := os.NewFile(lifelineFD, "sandbox-init-lifeline")
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		var b [64]byte
		for {
			// The launcher never writes: EOF is the only way out, and
			// bytes written by mistake are ignored.
			if _, err := f.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return lost, nil
}

// launcherGone reports, without waiting, whether the lifeline's write ends
// are all closed (poll reports POLLHUP on a pipe without writers).
func launcherGone() bool {
	fds := []unix.PollFd{{Fd: lifelineFD, Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
	}
}
