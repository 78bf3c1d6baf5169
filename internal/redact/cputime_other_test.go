//go:build !linux

package redact

import "time"

// cpuTime is the wall time of f where no per-thread CPU clock is used: a
// busy machine slows runs down, and the fastest of several is taken.
func cpuTime(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
