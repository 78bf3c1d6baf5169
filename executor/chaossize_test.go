package executor

import "flag"

// chaosFull: `make test` runs the chaos scenarios and the stop rounds of
// TestStopLeavesNoClaim small; `make chaos` runs them at full size. It is
// in a file without build constraints because the stop test runs on every
// platform, the chaos scenarios (chaos_test.go) only on Unix.
var chaosFull = flag.Bool("chaos.full", false, "run the chaos scenarios at full size")

func chaosSize(small, full int) int {
	if *chaosFull {
		return full
	}
	return small
}
