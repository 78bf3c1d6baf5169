package procinit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/internal/seccomp"
)

// Descriptors of the init besides stdio.
const (
	specFD     = 3
	usageFD    = 4
	lifelineFD = 5 // with Spec.Lifeline
)

// Command builds the command that re-executes self as the init of spec:
// argv is [self, Hidden], the Spec travels as JSON in a sealed memfd on
// descriptor 3 (never in argv or the environment), the init's environment
// is empty, stdin is /dev/null, and the init leads a new process group and
// gets SIGKILL when the thread that started it exits (Pdeathsig: start it
// from a goroutine that stays alive, or one locked with
// runtime.LockOSThread).
//
// The caller sets Stdout and Stderr (the target inherits them) and may call
// WithUsage. cmd.ExtraFiles[0] is the spec memfd: close it after Start or
// leave it to the garbage collector.
func Command(self string, spec Spec) (*exec.Cmd, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	f, err := SpecFile(spec)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{self, Hidden},
		Env:        []string{},
		ExtraFiles: []*os.File{f},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	return cmd, nil
}

// SpecFile checks spec and returns a sealed memfd holding it in the wire
// format (wire_linux.go), positioned at 0: what the init reads on
// descriptor 3. The seccomp program is assembled here, so that the init
// only loads it. Command uses it; a
// launcher that starts the init some other way (tier C starts it inside
// bubblewrap) passes the file as the init's descriptor 3 itself.
func SpecFile(spec Spec) (*os.File, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	var filter []byte
	if spec.Seccomp {
		f, err := seccomp.Build(seccomp.Options{DenyUnixSocket: spec.DenyUnixSockets})
		if err != nil {
			return nil, err
		}
		filter = f.Bytes()
	}
	data, err := encodeSpec(spec, filter)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("sandbox-init-spec", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("create sandbox init spec memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sandbox-init-spec")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("write sandbox init spec: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("rewind sandbox init spec: %w", err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal sandbox init spec: %w", err)
	}
	return f, nil
}

// ErrUsageFD is returned by WithUsage when cmd does not come from Command
// or already has descriptor 4 set.
var ErrUsageFD = errors.New("sandbox init command: descriptor 4 is not free")

// WithUsage makes the init report its Usage: it passes the write end of a
// pipe as descriptor 4 and returns the function that reads the report. Call
// that function once, after cmd.Wait (it closes the parent's write end so
// the read ends); it also closes the pipe.
func WithUsage(cmd *exec.Cmd) (read func() (Usage, error), err error) {
	if len(cmd.ExtraFiles) != usageFD-specFD {
		return nil, ErrUsageFD
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox init usage pipe: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	read = func() (Usage, error) {
		w.Close()
		defer r.Close()
		return ReadUsage(r)
	}
	return read, nil
}
