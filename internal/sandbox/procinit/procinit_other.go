//go:build !linux

package procinit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ErrUnsupported is returned on systems other than Linux.
var ErrUnsupported = errors.New("sandbox init: only supported on linux")

// Command fails: the sandbox init needs Linux.
func Command(self string, spec Spec) (*exec.Cmd, error) { return nil, ErrUnsupported }

// SpecFile fails: the sandbox init needs Linux.
func SpecFile(spec Spec) (*os.File, error) { return nil, ErrUnsupported }

// ApplyTo fails: the sandbox init needs Linux.
func (l Limits) ApplyTo(pid int) error { return ErrUnsupported }

// WithUsage fails: the sandbox init needs Linux.
func WithUsage(cmd *exec.Cmd) (func() (Usage, error), error) { return nil, ErrUnsupported }

// Main fails: the sandbox init needs Linux.
func Main() int {
	fmt.Fprintln(os.Stderr, ErrUnsupported)
	return ExitInitFailed
}
