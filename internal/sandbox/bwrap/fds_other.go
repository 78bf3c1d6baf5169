//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

// inheritNothing is unsupported off Linux, where bubblewrap does not run.
func inheritNothing() error { return errors.New("bubblewrap sandboxes need Linux") }

// blockingPipe is unsupported off Linux, where bubblewrap does not run.
func blockingPipe() (r, w *os.File, err error) {
	return nil, nil, errors.New("bubblewrap sandboxes need Linux")
}
