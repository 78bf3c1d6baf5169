//go:build !windows

package jobobject

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestFailsClosed checks that off Windows nothing runs and both entry
// points say why, so that a caller selecting this backend fails closed.
func TestFailsClosed(t *testing.T) {
	if err := Available(); !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, ErrUnsupported) {
		t.Errorf("Available() = %v, want ErrUnsupported", err)
	}
	var out bytes.Buffer
	exit, err := limitedPlan.Run(context.Background(), &out, &out)
	if !errors.Is(err, errors.ErrUnsupported) || exit != (Exit{}) || out.Len() != 0 {
		t.Errorf("Run() = %+v, %v, output %q; want ErrUnsupported and nothing else", exit, err, out.String())
	}
}
