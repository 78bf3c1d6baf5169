//go:build !linux

package bwrap

import "errors"

// inheritNothing is unsupported off Linux, where bubblewrap does not run.
func inheritNothing() error { return errors.New("bubblewrap sandboxes need Linux") }
