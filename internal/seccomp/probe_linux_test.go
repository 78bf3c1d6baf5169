package seccomp

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probe is one thing the child process tries under (or without) the
// filter; run reports "ok", an errno name such as "EPERM", or an error.
type probe struct {
	name string
	// control marks probes that change nothing and whose outcome without
	// the filter is predictable anywhere, so the control run asserts it.
	control bool
	run     func() string
}

// result turns an error into a probe outcome.
func result(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "error: " + err.Error()
}

// rawResult is result for a raw syscall.
func rawResult(_ uintptr, errno syscall.Errno) string {
	if errno == 0 {
		return "ok"
	}
	return result(errno)
}

// sys runs a raw syscall with up to six arguments.
func sys(nr uintptr, args ...uintptr) string {
	var a [6]uintptr
	copy(a[:], args)
	r, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return rawResult(r, errno)
}

// badFD is an fd no process has: the kernel answers EBADF unless the
// filter answers first.
const badFD = ^uintptr(0)

// probes lists the probes in the order they run; those that would change
// the process if the filter let them through come last.
func probes() []probe {
	ps := []probe{
		{"ioctl_tiocsti_badfd", true, func() string { return sys(unix.SYS_IOCTL, badFD, unix.TIOCSTI) }},
		{"ioctl_tiocsti_hibits_badfd", true, func() string {
			cmd := uint64(1)<<32 | unix.TIOCSTI // the kernel drops the high bits
			return sys(unix.SYS_IOCTL, badFD, uintptr(cmd))
		}},
		{"ioctl_tioclinux_badfd", true, func() string { return sys(unix.SYS_IOCTL, badFD, unix.TIOCLINUX) }},
		{"ioctl_tcgets_badfd", true, func() string { return sys(unix.SYS_IOCTL, badFD, unix.TCGETS) }},
		{"ioctl_pty", false, ptyProbe},
		{"io_uring_setup", false, func() string {
			var params [120]byte // struct io_uring_params
			return sys(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)))
		}},
		{"keyctl", false, func() string {
			_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
			return result(err)
		}},
		{"bpf", false, func() string { return sys(unix.SYS_BPF, 0xffff, 0, 0) }},
		{"perf_event_open", false, func() string { return sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), badFD, 0) }},
		{"userfaultfd", false, func() string { return sys(unix.SYS_USERFAULTFD, 0) }},
		{"process_vm_readv", false, func() string { return sys(unix.SYS_PROCESS_VM_READV, 1, 0, 0, 0, 0, 0) }},
		{"mount", false, func() string { return result(unix.Mount("none", "/nonexistent-seccomp-probe", "tmpfs", 0, "")) }},
		{"setns", false, func() string { return result(unix.Setns(int(badFD>>1), 0)) }},
		{"clone3", false, func() string { return sys(unix.SYS_CLONE3, 0, 0) }},
		{"socket_inet", false, func() string { return socketProbe(unix.AF_INET) }},
		{"socket_inet6", false, func() string { return socketProbe(unix.AF_INET6) }},
		{"socket_netlink", false, func() string { return socketProbe(unix.AF_NETLINK) }},
		{"socket_unix", true, func() string { return socketProbe(unix.AF_UNIX) }},
		{"socketpair_unix", true, func() string {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return result(err)
		}},
		{"personality_query", true, func() string { return sys(unix.SYS_PERSONALITY, 0xffffffff) }},
		{"work_file", true, fileProbe},
		{"work_exec", true, execProbe},
		{"clone_newuser", false, func() string {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
			return result(cmd.Run())
		}},
	}
	ps = append(ps, archProbes()...)
	return append(ps,
		probe{"unshare_newnet", false, func() string { return result(unix.Unshare(unix.CLONE_NEWNET)) }},
		probe{"unshare_newuser", false, func() string { return result(unix.Unshare(unix.CLONE_NEWUSER)) }},
		probe{"personality_linux32", false, func() string { return sys(unix.SYS_PERSONALITY, 0x0008 /* PER_LINUX32 */) }},
		probe{"ptrace_traceme", false, func() string { return sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME) }},
	)
}

// ptyProbe tries TIOCSTI, then TCGETS, on a pseudo-terminal master.
func ptyProbe() string {
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return result(err)
	}
	defer f.Close()
	c := byte('x')
	sti := sys(unix.SYS_IOCTL, f.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	_, err = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return "TIOCSTI " + sti + ", TCGETS " + result(err)
}

func socketProbe(family int) string {
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	return result(err)
}

// fileProbe writes a file and reads it back.
func fileProbe() string {
	f, err := os.CreateTemp("", "seccomp-probe-")
	if err != nil {
		return result(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteString("under the filter"); err != nil {
		return result(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return result(err)
	}
	if string(b) != "under the filter" {
		return "error: read back " + string(b)
	}
	return "ok"
}

// execProbe forks and execs /bin/true and a shell that forks again.
func execProbe() string {
	if err := exec.Command("/bin/true").Run(); err != nil {
		return "error: /bin/true: " + err.Error()
	}
	out, err := exec.Command("/bin/sh", "-c", "echo $(echo nested)").Output()
	if err != nil {
		return "error: /bin/sh: " + err.Error()
	}
	if !bytes.Equal(out, []byte("nested\n")) {
		return "error: /bin/sh printed " + string(out)
	}
	return "ok"
}
