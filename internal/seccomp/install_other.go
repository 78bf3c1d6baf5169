//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
)

// Install fails: seccomp exists only on Linux.
func (f *Filter) Install() error {
	return fmt.Errorf("install seccomp filter: %w", errors.ErrUnsupported)
}
