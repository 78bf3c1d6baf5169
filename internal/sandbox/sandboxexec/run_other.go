//go:build !darwin

package sandboxexec

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
)

// Available returns an error wrapping ErrUnsupported: sandbox-exec exists
// only on macOS.
func Available() error {
	return fmt.Errorf("%w (this is %s)", ErrUnsupported, runtime.GOOS)
}

// Command fails closed: it returns Available's error and no command.
func (p Plan) Command(ctx context.Context) (*exec.Cmd, error) {
	return nil, Available()
}

// Run fails closed: it starts nothing and returns Available's error.
func (p Plan) Run(ctx context.Context, stdout, stderr io.Writer) error {
	return Available()
}
