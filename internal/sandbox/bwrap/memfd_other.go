//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

// newMemfd is unsupported off Linux, where bubblewrap does not run.
func newMemfd(name string, data []byte) (*os.File, error) {
	return nil, errors.New("bubblewrap sandboxes need Linux")
}
