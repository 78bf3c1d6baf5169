//go:build !windows

package jobobject

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

// Available returns an error wrapping ErrUnsupported: job objects exist
// only on Windows.
func Available() error {
	return fmt.Errorf("%w (this is %s)", ErrUnsupported, runtime.GOOS)
}

// Run fails closed: it starts nothing and returns Available's error.
func (p Plan) Run(ctx context.Context, stdout, stderr io.Writer) (Exit, error) {
	return Exit{}, Available()
}
