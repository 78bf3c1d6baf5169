package processrun

import (
	"syscall"
	"testing"

	"github.com/execledger/execledger/internal/sandbox/cgroup"
	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// TestLimitHit: which ends are a limit's, from the exit and the figures,
// including the cgroup's, which this test supplies (hosts without the
// memory and pids controllers cannot produce them).
func TestLimitHit(t *testing.T) {
	tool := &Tool{cfg: Config{Limits: procinit.Limits{CPUSeconds: 2, FileSize: 1 << 20},
		CgroupLimits: cgroup.Limits{MemoryMax: 512 << 20, PidsMax: 256}}}
	noLimits := &Tool{cfg: Config{Limits: procinit.Limits{OpenFiles: 64}}}
	kill, xcpu, xfsz := int(syscall.SIGKILL), int(syscall.SIGXCPU), int(syscall.SIGXFSZ)
	sig := func(s int, cpuMS int64) exit { return exit{code: 128 + s, sig: s, targetCPUMS: cpuMS} }
	for _, tc := range []struct {
		name  string
		tool  *Tool
		e     exit
		r     map[string]int64
		limit string
		msg   string
	}{
		{name: "SIGKILL at the CPU limit", tool: tool, e: sig(kill, 2004), limit: limitCPU,
			msg: "killed by SIGKILL: CPU limit of 2 s (rlimit_cpu_seconds) reached"},
		{name: "SIGKILL short of the limit, as sampled ticks allow", tool: tool, e: sig(kill, 1000), limit: limitCPU,
			msg: "killed by SIGKILL: CPU limit of 2 s (rlimit_cpu_seconds) reached"},
		{name: "SIGXCPU at the CPU limit", tool: tool, e: sig(xcpu, 1990), limit: limitCPU,
			msg: "killed by SIGXCPU: CPU limit of 2 s (rlimit_cpu_seconds) reached"},
		{name: "SIGKILL after little CPU", tool: tool, e: sig(kill, 999)},
		{name: "SIGXCPU sent by hand", tool: tool, e: sig(xcpu, 3)},
		{name: "SIGKILL, CPU unknown", tool: tool, e: sig(kill, -1)},
		{name: "SIGKILL without a CPU limit", tool: noLimits, e: sig(kill, 5000)},
		{name: "SIGXFSZ", tool: tool, e: sig(xfsz, 0), limit: limitFileSize,
			msg: "killed by SIGXFSZ: file size limit of 1048576 bytes (rlimit_file_size) reached"},
		{name: "SIGXFSZ without a file size limit", tool: noLimits, e: sig(xfsz, 0)},
		{name: "cgroup OOM kill", tool: tool, e: exit{code: 137, targetCPUMS: -1, unreported: true},
			r: map[string]int64{"cgroup_oom_kills": 1}, limit: limitMemory,
			msg: "killed by SIGKILL: memory limit of 536870912 bytes (cgroup memory.max) reached"},
		{name: "forks refused, then failed", tool: tool, e: exit{code: 2}, r: map[string]int64{"cgroup_pids_denied": 3},
			limit: limitPids, msg: "exited with status 2 after the process limit of 256 (cgroup pids.max) refused 3 forks"},
		{name: "forks refused, then succeeded", tool: tool, e: exit{}, r: map[string]int64{"cgroup_pids_denied": 3}},
		{name: "no OOM kill", tool: tool, e: exit{code: 1}, r: map[string]int64{"cgroup_oom_kills": 0, "cgroup_pids_denied": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if r == nil {
				r = map[string]int64{}
			}
			limit, msg := tc.tool.limitHit(tc.e, r)
			if limit != tc.limit || msg != tc.msg {
				t.Errorf("limitHit(%+v, %v) = %q, %q; want %q, %q", tc.e, r, limit, msg, tc.limit, tc.msg)
			}
		})
	}
}
