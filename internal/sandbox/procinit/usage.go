package procinit

import (
	"encoding/json"
	"fmt"
	"io"
)

// Usage is what the init reports on descriptor 4 when the target and all
// its descendants are gone. The CPU and memory figures are the kernel's
// RUSAGE_CHILDREN of the init: the sum (max for max_rss_kb) over every
// descendant it reaped.
type Usage struct {
	// ExitCode is the init's own exit status: the target's exit code, or
	// 128+Signal when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal is the number of the signal that ended the target, 0 if it
	// exited.
	Signal    int   `json:"signal"`
	CPUUserMS int64 `json:"cpu_user_ms"`
	CPUSysMS  int64 `json:"cpu_sys_ms"`
	MaxRSSKB  int64 `json:"max_rss_kb"`
	// TargetCPUMS is the target's own CPU time, user and system (with
	// that of the children it waited for), from the wait that reaped it:
	// RLIMIT_CPU counts each process's own time, so this is what tells a
	// target the CPU limit ended from one killed by someone else.
	TargetCPUMS int64 `json:"target_cpu_ms"`
	// DescendantsKilled counts the processes still alive when the target
	// ended, which the init SIGKILLed.
	DescendantsKilled int `json:"descendants_killed"`
}

// ReadUsage decodes the Usage the init wrote to r.
func ReadUsage(r io.Reader) (Usage, error) {
	var u Usage
	if err := json.NewDecoder(r).Decode(&u); err != nil {
		return Usage{}, fmt.Errorf("read sandbox init usage: %w", err)
	}
	return u, nil
}
