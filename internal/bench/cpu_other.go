//go:build !linux

package bench

import "time"

// processCPU and clusterCPU need Linux's /proc.
func processCPU() (time.Duration, bool)    { return 0, false }
func clusterCPU(int) (time.Duration, bool) { return 0, false }
