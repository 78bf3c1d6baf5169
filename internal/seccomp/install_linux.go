package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install sets PR_SET_NO_NEW_PRIVS and loads the filter into the calling
// process with seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC):
// TSYNC puts every thread of the process (and its no_new_privs) under the
// filter, or fails when a thread already runs under a different filter
// tree. The filter cannot be removed afterwards, so call Install only in a
// process about to exec the sandboxed program, on a locked OS thread
// (runtime.LockOSThread), and exec right after. It fails for a filter
// built for another architecture.
func (f *Filter) Install() error {
	if f.arch.goarch != runtime.GOARCH {
		return fmt.Errorf("install seccomp filter: built for %s, running on %s: %w", f.arch.goarch, runtime.GOARCH, ErrUnsupportedArch)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("install seccomp filter: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	insns := make([]unix.SockFilter, len(f.insns))
	for i, in := range f.insns {
		insns[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(insns)
	if errno != 0 {
		return fmt.Errorf("install seccomp filter: seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if r != 0 {
		// With TSYNC, a positive result is the id of a thread that could
		// not be synchronised; nothing was installed.
		return fmt.Errorf("install seccomp filter: thread %d cannot take the filter (TSYNC)", r)
	}
	return nil
}
