//go:build !darwin

package sandboxexec

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestFailsClosed checks that off macOS nothing runs and every entry point
// says why, so that a caller selecting this backend fails closed.
func TestFailsClosed(t *testing.T) {
	if err := Available(); !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, ErrUnsupported) {
		t.Errorf("Available() = %v, want ErrUnsupported", err)
	}
	p := hostPlan(t)
	cmd, err := p.Command(context.Background())
	if cmd != nil || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Command() = %v, %v; want no command and ErrUnsupported", cmd, err)
	}
	var out bytes.Buffer
	if err := p.Run(context.Background(), &out, &out); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Run() = %v, want ErrUnsupported", err)
	}
	if out.Len() != 0 {
		t.Errorf("Run() wrote %q", out.String())
	}
}
