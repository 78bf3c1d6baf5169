//go:build !linux

package bwrap

import (
	"errors"
	"os"
	"syscall"

	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// setLimits is unsupported off Linux, where bubblewrap does not run.
func setLimits(info, block *os.File, limits procinit.Limits, as *syscall.Credential, kill func()) error {
	return errors.New("bubblewrap sandboxes need Linux")
}
