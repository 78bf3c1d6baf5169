//go:build linux

package processrun

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Limits a call can end on, as the output's limit_exceeded names them: the
// keys of serve's [process_run] configuration, or the cgroup interface
// file that set them.
const (
	limitCPU      = "rlimit_cpu_seconds"
	limitFileSize = "rlimit_file_size"
	limitMemory   = "cgroup memory.max"
	limitPids     = "cgroup pids.max"
)

// limitHit tells whether a limit ended a process that exited with e, given
// the figures recorded for it (the cgroup's among them), and returns the
// limit and the error to report; "" when no limit did, or none can be told.
//
//   - RLIMIT_CPU: the kernel sends SIGKILL when a process's CPU time
//     reaches the limit (soft and hard are equal; kernels that check the
//     soft limit first send SIGXCPU). Either counts as the limit's only
//     when the program's own CPU time, from the init's report, is at least
//     half the limit: RLIMIT_CPU counts sampled ticks and rusage the exact
//     run time, which differ by a tenth or more on a loaded machine, and
//     the same signal from elsewhere (the program's own kill -9; a stop
//     after the grace period is classified before) rarely comes after that
//     much CPU. Without a report, nothing is claimed.
//   - RLIMIT_FSIZE: SIGXFSZ, sent when a write passes the limit.
//   - memory.max: the cgroup's OOM kills (memory.events oom_kill), which
//     end the whole leaf (memory.oom.group), init included.
//   - pids.max: forks the cgroup refused (pids.events max), when the
//     process then failed.
//
// The output budget is told by the capture, not here.
func (t *Tool) limitHit(e exit, r map[string]int64) (limit, msg string) {
	l := t.cfg.Limits
	sig := syscall.Signal(e.sig)
	switch {
	case r["cgroup_oom_kills"] > 0:
		return limitMemory, fmt.Sprintf("killed by SIGKILL: memory limit of %d bytes (%s) reached",
			t.cfg.CgroupLimits.MemoryMax, limitMemory)
	case l.CPUSeconds > 0 && (sig == syscall.SIGKILL || sig == syscall.SIGXCPU) &&
		e.targetCPUMS >= 0 && 2*e.targetCPUMS >= int64(l.CPUSeconds)*1000:
		return limitCPU, fmt.Sprintf("killed by %s: CPU limit of %d s (%s) reached", unix.SignalName(sig), l.CPUSeconds, limitCPU)
	case l.FileSize > 0 && sig == syscall.SIGXFSZ:
		return limitFileSize, fmt.Sprintf("killed by SIGXFSZ: file size limit of %d bytes (%s) reached", l.FileSize, limitFileSize)
	case e.code != 0 && r["cgroup_pids_denied"] > 0:
		return limitPids, fmt.Sprintf("exited with status %d after the process limit of %d (%s) refused %d forks",
			e.code, t.cfg.CgroupLimits.PidsMax, limitPids, r["cgroup_pids_denied"])
	}
	return "", ""
}
