package jobobject

// notEnforced are what a job object does not provide, recorded so that the
// attestation does not overclaim.
var notEnforced = []string{
	"filesystem isolation: the process has the executor account's file and registry access (an AppContainer or a restricted, low-integrity token would limit it)",
	"network isolation: the process has the executor account's network access (Windows Filtering Platform filters on an AppContainer SID would limit it)",
	"process isolation: the process runs with the executor's token and can open the account's other processes, the executor among them",
	"kernel-mode CPU time: the time limits count user-mode time only",
}

// Enforcement describes what the plan enforces, for the attestation: the
// job object's limits and UI restrictions, the creation flags and the
// inherited handles, and what is not enforced. Environment values are
// left out, only their names are listed. An invalid plan gives a record
// with plan_error and nothing it would claim.
func (p Plan) Enforcement() map[string]any {
	if err := p.validate(); err != nil {
		return map[string]any{"backend": Backend, "plan_error": err.Error()}
	}
	c := p.job()
	none := func(set bool, v any) any {
		if !set {
			return "none"
		}
		return v
	}
	cpu := any("none")
	if c.CPURate != nil {
		cpu = map[string]any{"hard_cap": true, "rate_per_10000": c.CPURate.CPURate}
	}
	return map[string]any{
		"backend":                Backend,
		"limit_flags":            flagNames(c.LimitFlags, limitNames),
		"active_process_limit":   none(c.LimitFlags&limitActiveProcess != 0, c.ActiveProcessLimit),
		"job_memory_bytes":       none(c.LimitFlags&limitJobMemory != 0, c.JobMemoryLimit),
		"process_memory_bytes":   none(c.LimitFlags&limitProcessMemory != 0, c.ProcessMemoryLimit),
		"process_user_time_ms":   none(c.LimitFlags&limitProcessTime != 0, p.Limits.ProcessUserTime.Milliseconds()),
		"job_user_time_ms":       none(c.LimitFlags&limitJobTime != 0, p.Limits.JobUserTime.Milliseconds()),
		"cpu_rate":               cpu,
		"ui_restrictions":        flagNames(c.UIRestrictionsClass, uiNames),
		"breakaway":              "denied",
		"kill_on_job_close":      "the job's processes are terminated when its last handle closes; the executor holds the only one it made, so they end with the run or with the executor",
		"creation_flags":         flagNames(c.CreationFlags, creationNames),
		"assigned_before_resume": true,
		"inherited_handles":      []string{"stdin: NUL", "stdout: pipe", "stderr: pipe"},
		"env":                    p.envNames(),
		"clearenv":               true,
		"workdir":                p.Dir,
		"timeout_ms":             none(p.Timeout > 0, p.Timeout.Milliseconds()),
		"filesystem":             "not isolated",
		"network":                "not isolated",
		"user":                   "the executor's token",
		"not_enforced":           notEnforced,
	}
}
