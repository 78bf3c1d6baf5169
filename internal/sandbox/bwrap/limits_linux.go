package bwrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// infoTimeout bounds the wait for bwrap's --info-fd report, which it
// writes right after creating the sandbox's pid 1.
const infoTimeout = 10 * time.Second

// setLimits reads the sandbox's pid 1 from bwrap's --info-fd, sets limits
// on it with prlimit(2) and writes the byte bwrap waits for on --block-fd.
//
// Why the program inherits them: in bubblewrap's main() the monitor writes
// {"child-pid": N} to --info-fd right after clone() and before it lets the
// child (pid 1 inside, pid N outside) run; the child sets up the mounts
// and namespaces, drops its privileges, and only then reads one byte from
// --block-fd, before it loads the seccomp filter, changes directory, calls
// setsid() and fork()s: pid 1 becomes the reaper (do_init) and its child
// execvp()s the program. Limits set on pid 1 while it blocks are therefore
// inherited through that fork and exec by the program and everything it
// starts. Read in containers/bubblewrap bubblewrap.c main() (the
// "opt_info_fd", "opt_block_fd" and "Can't fork for pid 1" blocks, at
// 80075f35; 0.8.0 has the same order), and checked against the installed
// bwrap by TestLimitsReachProgram, which reads them in /proc/self/limits.
//
// The caller may change pid 1's limits when it is pid 1's uid (bwrap ran
// as the caller) or holds CAP_SYS_RESOURCE. A root caller that runs bwrap
// as HostUID without that capability (Docker's default set, for one, lacks
// it) gets EPERM; setLimits then sets them from a thread whose real ids are
// HostUID's (prlimitAs).
//
// A report that ends early (bwrap failed before its clone) or a pid 1 that
// is already gone (ESRCH: its setup failed) means no program will run:
// setLimits releases the block and returns nil, and bwrap's exit status
// and stderr tell what happened. Any other error is returned; the caller
// must kill bwrap before the block end is closed.
func setLimits(info, block *os.File, limits procinit.Limits, as *syscall.Credential, kill func()) error {
	// A blocking read: waiting in the netpoller instead cost this process
	// about 0.9 ms of CPU per sandbox rather than 0.3 ms (self-cpu-ns/op of
	// BenchmarkTrue/bwrap_limits against /bwrap). kill ends a bwrap that
	// reports nothing, which ends the read.
	watchdog := time.AfterFunc(infoTimeout, kill)
	pid, err := childPid(info)
	if !watchdog.Stop() {
		return fmt.Errorf("--info-fd: no report within %s", infoTimeout)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	if err != nil {
		return err
	}
	// Only a pid 1 that has died and been reaped by bwrap's monitor could
	// have its pid reused before this call; the kernel hands out pids in
	// increasing order up to pid_max, so that would take pid_max process
	// creations in these microseconds.
	err = limits.ApplyTo(pid)
	if errors.Is(err, unix.EPERM) && as != nil {
		err = prlimitAs(pid, limits, as)
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	if _, err := block.Write([]byte{'1'}); err != nil && !errors.Is(err, unix.EPIPE) {
		return fmt.Errorf("release --block-fd: %w", err)
	}
	return nil
}

// childPid decodes bwrap's --info-fd report, {"child-pid": N}, which
// bwrap writes with one write(2) (bubblewrap.c, dump_info): a short pipe
// write arrives whole. It reads up to the closing brace, not to EOF, which
// comes only when bwrap ends. A report that ends early is io.EOF (nothing
// read) or io.ErrUnexpectedEOF.
func childPid(info *os.File) (int, error) {
	var buf [256]byte
	n := 0
	for n == 0 || bytes.IndexByte(buf[:n], '}') < 0 {
		if n == len(buf) {
			return 0, fmt.Errorf("--info-fd report: longer than %d bytes", len(buf))
		}
		m, err := info.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) && n > 0 {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, fmt.Errorf("--info-fd report: %w", err)
		}
	}
	var report struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.Unmarshal(buf[:n], &report); err != nil {
		return 0, fmt.Errorf("--info-fd report: %w", err)
	}
	if report.ChildPid <= 1 {
		return 0, fmt.Errorf("--info-fd report: child-pid %d", report.ChildPid)
	}
	return report.ChildPid, nil
}

// prlimitAs sets limits on pid from a thread whose real uid and gid are,
// for the call, as.Uid and as.Gid: prlimit(2) lets a caller change the
// limits of a process whose real, effective and saved ids all equal the
// caller's real ids. Linux credentials belong to threads, so only a thread
// locked to a goroutine of its own switches, through raw setresuid(2) and
// setresgid(2) (Go's syscall.Setresuid changes every thread). Its
// effective and saved ids stay 0, so it keeps its capabilities and
// switches back; Go starts new threads from a template thread while one is
// locked, so none inherits the switched ids. While switched, the thread
// can be signalled by processes of as.Uid in this pid namespace (bwrap's
// monitors, and nothing else when that uid is the sandboxes' alone); the
// sandboxes, in pid namespaces of their own, cannot name it. Running
// prlimit(1) as as.Uid instead, as an earlier version did, cost a process
// per sandbox and about 1.8 ms of CPU (BenchmarkTrue/bwrap_host_uid_limits
// against /bwrap_host_uid); the switch costs about 0.1 ms more than
// setting the limits directly.
func prlimitAs(pid int, limits procinit.Limits, as *syscall.Credential) error {
	uid, gid := os.Getuid(), os.Getgid()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := setRealIDs(int(as.Uid), int(as.Gid))
		if err == nil {
			err = limits.ApplyTo(pid)
		} else {
			err = fmt.Errorf("set the sandbox's limits as uid %d: %w", as.Uid, err)
		}
		if rerr := setRealIDs(uid, gid); rerr != nil {
			// Left locked, the thread ends with this goroutine.
			done <- fmt.Errorf("restore the real ids of a thread: %w", rerr)
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// setRealIDs sets the calling thread's real gid and uid, keeping its
// effective and saved ones.
func setRealIDs(uid, gid int) error {
	const keep = ^uintptr(0) // -1: unchanged
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), keep, keep); e != 0 {
		return e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), keep, keep); e != 0 {
		return e
	}
	return nil
}
