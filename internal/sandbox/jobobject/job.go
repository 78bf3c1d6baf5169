package jobobject

import "time"

// JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags (winnt.h).
const (
	limitProcessTime             = 0x00000002 // JOB_OBJECT_LIMIT_PROCESS_TIME
	limitJobTime                 = 0x00000004 // JOB_OBJECT_LIMIT_JOB_TIME
	limitActiveProcess           = 0x00000008 // JOB_OBJECT_LIMIT_ACTIVE_PROCESS
	limitProcessMemory           = 0x00000100 // JOB_OBJECT_LIMIT_PROCESS_MEMORY
	limitJobMemory               = 0x00000200 // JOB_OBJECT_LIMIT_JOB_MEMORY
	limitDieOnUnhandledException = 0x00000400 // JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
	limitBreakawayOK             = 0x00000800 // JOB_OBJECT_LIMIT_BREAKAWAY_OK, never set
	limitSilentBreakawayOK       = 0x00001000 // JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK, never set
	limitKillOnJobClose          = 0x00002000 // JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
)

// JOBOBJECT_BASIC_UI_RESTRICTIONS.UIRestrictionsClass (winnt.h).
const (
	uiHandles          = 0x00000001 // JOB_OBJECT_UILIMIT_HANDLES: no USER handles (windows) of processes outside the job
	uiReadClipboard    = 0x00000002 // JOB_OBJECT_UILIMIT_READCLIPBOARD
	uiWriteClipboard   = 0x00000004 // JOB_OBJECT_UILIMIT_WRITECLIPBOARD
	uiSystemParameters = 0x00000008 // JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS: no SystemParametersInfo changes
	uiDisplaySettings  = 0x00000010 // JOB_OBJECT_UILIMIT_DISPLAYSETTINGS: no ChangeDisplaySettings
	uiGlobalAtoms      = 0x00000020 // JOB_OBJECT_UILIMIT_GLOBALATOMS: a global atom table of its own
	uiDesktop          = 0x00000040 // JOB_OBJECT_UILIMIT_DESKTOP: no creating or switching desktops
	uiExitWindows      = 0x00000080 // JOB_OBJECT_UILIMIT_EXITWINDOWS: no ExitWindows(Ex), so no logoff or shutdown
)

// JOBOBJECT_CPU_RATE_CONTROL_INFORMATION.ControlFlags (winnt.h).
const (
	cpuRateEnable  = 0x00000001 // JOB_OBJECT_CPU_RATE_CONTROL_ENABLE
	cpuRateHardCap = 0x00000004 // JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP
)

// CreateProcess's dwCreationFlags (WinBase.h).
const (
	createSuspended            = 0x00000004 // CREATE_SUSPENDED: resumed only once in the job
	createNewProcessGroup      = 0x00000200 // CREATE_NEW_PROCESS_GROUP: the executor's Ctrl+C does not reach it
	createUnicodeEnvironment   = 0x00000400 // CREATE_UNICODE_ENVIRONMENT: the block is UTF-16
	extendedStartupinfoPresent = 0x00080000 // EXTENDED_STARTUPINFO_PRESENT: carries the inherited-handle list
	createNoWindow             = 0x08000000 // CREATE_NO_WINDOW: a console program gets no console window
)

// uiRestrictions are all eight UI restrictions; every job gets them.
const uiRestrictions = uiHandles | uiReadClipboard | uiWriteClipboard | uiSystemParameters |
	uiDisplaySettings | uiGlobalAtoms | uiDesktop | uiExitWindows

// creationFlags are the flags every process is created with. Neither
// CREATE_BREAKAWAY_FROM_JOB nor CREATE_DEFAULT_ERROR_MODE is set: the
// process inherits the executor's error mode, which suppresses the
// critical-error dialogs that would stall a run no one watches.
const creationFlags = createSuspended | createNewProcessGroup | createUnicodeEnvironment |
	extendedStartupinfoPresent | createNoWindow

// JobConfig is what Run sets, in the units of the Windows structures.
type JobConfig struct {
	// LimitFlags, PerProcessUserTimeLimit, PerJobUserTimeLimit and
	// ActiveProcessLimit are JOBOBJECT_BASIC_LIMIT_INFORMATION's fields;
	// the time limits are in 100 ns units.
	LimitFlags              uint32
	PerProcessUserTimeLimit int64
	PerJobUserTimeLimit     int64
	ActiveProcessLimit      uint32
	// ProcessMemoryLimit and JobMemoryLimit are
	// JOBOBJECT_EXTENDED_LIMIT_INFORMATION's, in bytes.
	ProcessMemoryLimit uint64
	JobMemoryLimit     uint64
	// UIRestrictionsClass is JOBOBJECT_BASIC_UI_RESTRICTIONS's only field.
	UIRestrictionsClass uint32
	// CPURate is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION; nil sets none.
	CPURate *CPURateControl
	// CreationFlags are CreateProcess's dwCreationFlags.
	CreationFlags uint32
}

// CPURateControl is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION with the
// CpuRate member of its union.
type CPURateControl struct {
	ControlFlags uint32
	CPURate      uint32
}

// Job computes the job object's configuration and the creation flags.
func (p Plan) Job() (JobConfig, error) {
	if err := p.validate(); err != nil {
		return JobConfig{}, err
	}
	return p.job(), nil
}

// job computes the configuration of a valid plan.
func (p Plan) job() JobConfig {
	l := p.Limits
	c := JobConfig{
		LimitFlags:          limitKillOnJobClose | limitDieOnUnhandledException,
		UIRestrictionsClass: uiRestrictions,
		CreationFlags:       creationFlags,
	}
	if l.ActiveProcesses > 0 {
		c.LimitFlags |= limitActiveProcess
		c.ActiveProcessLimit = l.ActiveProcesses
	}
	if l.JobMemory > 0 {
		c.LimitFlags |= limitJobMemory
		c.JobMemoryLimit = l.JobMemory
	}
	if l.ProcessMemory > 0 {
		c.LimitFlags |= limitProcessMemory
		c.ProcessMemoryLimit = l.ProcessMemory
	}
	if l.ProcessUserTime > 0 {
		c.LimitFlags |= limitProcessTime
		c.PerProcessUserTimeLimit = ticks(l.ProcessUserTime)
	}
	if l.JobUserTime > 0 {
		c.LimitFlags |= limitJobTime
		c.PerJobUserTimeLimit = ticks(l.JobUserTime)
	}
	if l.CPURate > 0 {
		c.CPURate = &CPURateControl{ControlFlags: cpuRateEnable | cpuRateHardCap, CPURate: l.CPURate}
	}
	return c
}

// ticks converts d to 100 ns units, rounding up so that a limit is never
// shorter than asked.
func ticks(d time.Duration) int64 {
	t := int64(d / 100)
	if d%100 != 0 {
		t++
	}
	return t
}

// flagNames returns the names of the bits of v that names knows, in
// ascending bit order.
func flagNames(v uint32, names map[uint32]string) []string {
	var out []string
	for bit := uint32(1); bit != 0; bit <<= 1 {
		if v&bit != 0 {
			if n, ok := names[bit]; ok {
				out = append(out, n)
			}
		}
	}
	return out
}

var limitNames = map[uint32]string{
	limitProcessTime:             "JOB_OBJECT_LIMIT_PROCESS_TIME",
	limitJobTime:                 "JOB_OBJECT_LIMIT_JOB_TIME",
	limitActiveProcess:           "JOB_OBJECT_LIMIT_ACTIVE_PROCESS",
	limitProcessMemory:           "JOB_OBJECT_LIMIT_PROCESS_MEMORY",
	limitJobMemory:               "JOB_OBJECT_LIMIT_JOB_MEMORY",
	limitDieOnUnhandledException: "JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION",
	limitBreakawayOK:             "JOB_OBJECT_LIMIT_BREAKAWAY_OK",
	limitSilentBreakawayOK:       "JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK",
	limitKillOnJobClose:          "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE",
}

var uiNames = map[uint32]string{
	uiHandles:          "JOB_OBJECT_UILIMIT_HANDLES",
	uiReadClipboard:    "JOB_OBJECT_UILIMIT_READCLIPBOARD",
	uiWriteClipboard:   "JOB_OBJECT_UILIMIT_WRITECLIPBOARD",
	uiSystemParameters: "JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS",
	uiDisplaySettings:  "JOB_OBJECT_UILIMIT_DISPLAYSETTINGS",
	uiGlobalAtoms:      "JOB_OBJECT_UILIMIT_GLOBALATOMS",
	uiDesktop:          "JOB_OBJECT_UILIMIT_DESKTOP",
	uiExitWindows:      "JOB_OBJECT_UILIMIT_EXITWINDOWS",
}

var creationNames = map[uint32]string{
	createSuspended:            "CREATE_SUSPENDED",
	createNewProcessGroup:      "CREATE_NEW_PROCESS_GROUP",
	createUnicodeEnvironment:   "CREATE_UNICODE_ENVIRONMENT",
	extendedStartupinfoPresent: "EXTENDED_STARTUPINFO_PRESENT",
	createNoWindow:             "CREATE_NO_WINDOW",
}
