//go:build !linux && !darwin && !windows

package processrun

import (
	"context"
	"fmt"
	"runtime"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// platformBackend fails: this platform has no tier C backend, and
// process.run never runs unsandboxed.
func platformBackend() (nativeBackend, error) {
	return nativeBackend{}, fmt.Errorf("processrun: no sandbox backend on %s (sandbox_tier_c_unsupported): tier C needs Linux, macOS or Windows", runtime.GOOS)
}

func available() error { return procinit.ErrUnsupported }

func nativeLookPath(string, []string) (string, error) { return "", procinit.ErrUnsupported }

func (t *Tool) runBackend(context.Context, *procinput.Plan, string, *budget) (nativeEnd, map[string]any, error) {
	return nativeEnd{}, nil, procinit.ErrUnsupported
}
