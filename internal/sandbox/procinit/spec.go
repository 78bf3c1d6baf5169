package procinit

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Hidden is the subcommand under which the binary runs Main.
const Hidden = "__sandbox-init"

// Exit statuses of the init when the target did not run, after env(1) and
// the shells: the init itself failed, the target could not be executed, the
// target was not found.
const (
	ExitInitFailed    = 125
	ExitCannotExecute = 126
	ExitNotFound      = 127
)

// Limits are the resource limits the init sets on itself before it starts
// the target; soft and hard limits are equal. A zero field leaves that limit
// as inherited. RLIMIT_CORE is always set to 0.
type Limits struct {
	// CPUSeconds is RLIMIT_CPU: a process that has used this much CPU
	// time is ended by the kernel (SIGKILL, as the hard limit equals the
	// soft one; SIGXCPU on kernels that check the soft limit first). Each
	// process has its own budget: the limit is inherited, not shared,
	// across fork.
	CPUSeconds uint64 `json:"cpu_seconds,omitempty"`
	// AddressSpace is RLIMIT_AS in bytes. It is optional and best left
	// unset for managed runtimes: Go and the JVM reserve far more virtual
	// memory than they use (arenas, heap reservations, thread stacks) and
	// fail to start under a limit near their real footprint. Memory is
	// better bounded with a cgroup.
	AddressSpace uint64 `json:"address_space,omitempty"`
	// FileSize is RLIMIT_FSIZE in bytes: a write past it fails with EFBIG
	// after SIGXFSZ, whose default action ends the process.
	FileSize uint64 `json:"file_size,omitempty"`
	// OpenFiles is RLIMIT_NOFILE. It also binds the init, which needs a
	// few descriptors of its own to start the target; values below 16 are
	// raised to 16.
	OpenFiles uint64 `json:"open_files,omitempty"`
	// Processes is RLIMIT_NPROC. The kernel counts every process of the
	// target's real uid on the whole machine, not the processes of this
	// sandbox, and does not enforce it for root: it is only meaningful
	// with an unprivileged UID dedicated to sandboxes, and concurrent
	// sandboxes under the same uid share it.
	Processes uint64 `json:"processes,omitempty"`
}

// minOpenFiles is the lowest RLIMIT_NOFILE the init accepts: starting the
// target needs a pipe and a pidfd besides the inherited descriptors.
const minOpenFiles = 16

// Spec is what the init runs.
type Spec struct {
	// Path is the absolute path of the target program.
	Path string `json:"path"`
	// Args are the arguments after argv[0]; argv[0] is Path.
	Args []string `json:"args,omitempty"`
	// Env is the target's whole environment; nil means an empty one.
	Env []string `json:"env,omitempty"`
	// Dir is the target's working directory; empty keeps the init's.
	Dir    string `json:"dir,omitempty"`
	Limits Limits `json:"limits"`
	// Seccomp installs internal/seccomp's filter (with no_new_privs)
	// before the target starts.
	Seccomp bool `json:"seccomp,omitempty"`
	// DenyUnixSockets adds seccomp.Options.DenyUnixSocket to that filter:
	// a process sharing the host's filesystem and network namespace must
	// not reach the host's Unix sockets (PostgreSQL's among them).
	DenyUnixSockets bool `json:"deny_unix_sockets,omitempty"`
	// PrivateTmp gives the target a mount namespace of its own in which
	// PrivateDirs are empty tmpfs mounts (mode 1777, PrivateTmpBytes
	// each), so that it cannot write to, or read what others left in, the
	// host's world-writable directories. It needs CAP_SYS_ADMIN (a root
	// launcher).
	PrivateTmp bool `json:"private_tmp,omitempty"`
	// PrivateTmpBytes bounds each private tmpfs; 0 means 64 MiB.
	PrivateTmpBytes uint64 `json:"private_tmp_bytes,omitempty"`
	// Keep are directories that stay visible when a private tmpfs covers
	// them (a workspace under /tmp): each is bound back at its path.
	Keep []string `json:"keep,omitempty"`
	// UID and GID are the target's credentials; 0 keeps the init's. When
	// the launcher runs as root it should pass an unprivileged id such as
	// 65534. A zero GID with a non-zero UID keeps the init's gid.
	UID uint32 `json:"uid,omitempty"`
	GID uint32 `json:"gid,omitempty"`
	// Bridge, when set, makes the init relay a TCP listener to a Unix
	// socket for as long as the target runs (see Bridge).
	Bridge *Bridge `json:"bridge,omitempty"`
	// Lifeline ties the sandbox to its launcher when the init is not the
	// launcher's own child (tier C, under bubblewrap): descriptor 5 is the
	// read end of a pipe whose write end only the launcher holds. Once
	// that end is closed — the launcher died, even of SIGKILL — the init
	// does not start the target, or kills the target's process group
	// (SIGKILL) and then, as always, every other descendant.
	Lifeline bool `json:"lifeline,omitempty"`
	// sweepHost makes the init find leftover descendants by reading every
	// process in /proc, its way on kernels without
	// /proc/PID/task/TID/children; set by tests to keep that path checked.
	sweepHost bool
}

// Bridge is tier C's way to the egress proxy: inside the sandbox's
// loopback-only network namespace the init listens on Listen before it
// starts the target, and relays every connection, byte for byte, to the
// Unix socket at Socket (internal/egress.Bridge), the bind-mounted proxy.
// The listener is gone when the init exits. It needs AF_INET sockets, so it
// cannot be combined with Spec.Seccomp, whose filter refuses them; under
// bubblewrap the sandbox's own filter applies instead.
type Bridge struct {
	// Listen is an IP:port, e.g. 127.0.0.1:3128.
	Listen string `json:"listen"`
	// Socket is the absolute path of the proxy's Unix socket.
	Socket string `json:"socket"`
}

// ErrInvalidSpec is wrapped by the errors of Spec.validate.
var ErrInvalidSpec = errors.New("invalid sandbox init spec")

func (s Spec) validate() error {
	if s.Path == "" || !filepath.IsAbs(s.Path) {
		return fmt.Errorf("%w: path %q is not absolute", ErrInvalidSpec, s.Path)
	}
	if s.Dir != "" && !filepath.IsAbs(s.Dir) {
		return fmt.Errorf("%w: dir %q is not absolute", ErrInvalidSpec, s.Dir)
	}
	if b := s.Bridge; b != nil {
		if _, err := netip.ParseAddrPort(b.Listen); err != nil {
			return fmt.Errorf("%w: bridge listen address %q is not IP:port", ErrInvalidSpec, b.Listen)
		}
		if !filepath.IsAbs(b.Socket) {
			return fmt.Errorf("%w: bridge socket %q is not absolute", ErrInvalidSpec, b.Socket)
		}
		if len(b.Socket) > maxSocketPath {
			return fmt.Errorf("%w: bridge socket %q is longer than %d bytes", ErrInvalidSpec, b.Socket, maxSocketPath)
		}
		if s.Seccomp {
			return fmt.Errorf("%w: a bridge needs inet sockets, which the init's seccomp filter refuses", ErrInvalidSpec)
		}
	}
	if err := s.checkStrings(); err != nil {
		return err
	}
	if s.DenyUnixSockets && !s.Seccomp {
		return fmt.Errorf("%w: deny_unix_sockets needs seccomp", ErrInvalidSpec)
	}
	return nil
}

// checkStrings refuses a NUL byte in what becomes a C string: a path,
// argument or environment entry cannot hold one (os/exec refuses them too).
func (s Spec) checkStrings() error {
	all := append([]string{s.Path, s.Dir}, s.Args...)
	all = append(all, s.Env...)
	all = append(all, s.Keep...)
	if s.Bridge != nil {
		all = append(all, s.Bridge.Socket)
	}
	for _, v := range all {
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidSpec, v)
		}
	}
	for _, k := range s.Keep {
		if !filepath.IsAbs(k) {
			return fmt.Errorf("%w: keep %q is not absolute", ErrInvalidSpec, k)
		}
	}
	return nil
}

// maxSocketPath is the longest Unix socket path: sockaddr_un.sun_path
// holds 108 bytes with the terminating NUL.
const maxSocketPath = 107

// PrivateDirs are the world-writable directories PrivateTmp replaces.
var PrivateDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}
