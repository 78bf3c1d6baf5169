//go:build windows

package jobobject

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Each local constant must equal the SDK's: a difference makes an index
// out of range, and this file fails to compile.
var (
	_ = [1]struct{}{}[limitProcessTime^windows.JOB_OBJECT_LIMIT_PROCESS_TIME]
	_ = [1]struct{}{}[limitJobTime^windows.JOB_OBJECT_LIMIT_JOB_TIME]
	_ = [1]struct{}{}[limitActiveProcess^windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS]
	_ = [1]struct{}{}[limitProcessMemory^windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY]
	_ = [1]struct{}{}[limitJobMemory^windows.JOB_OBJECT_LIMIT_JOB_MEMORY]
	_ = [1]struct{}{}[limitDieOnUnhandledException^windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION]
	_ = [1]struct{}{}[limitBreakawayOK^windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK]
	_ = [1]struct{}{}[limitSilentBreakawayOK^windows.JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK]
	_ = [1]struct{}{}[limitKillOnJobClose^windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE]
	_ = [1]struct{}{}[uiHandles^windows.JOB_OBJECT_UILIMIT_HANDLES]
	_ = [1]struct{}{}[uiReadClipboard^windows.JOB_OBJECT_UILIMIT_READCLIPBOARD]
	_ = [1]struct{}{}[uiWriteClipboard^windows.JOB_OBJECT_UILIMIT_WRITECLIPBOARD]
	_ = [1]struct{}{}[uiSystemParameters^windows.JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS]
	_ = [1]struct{}{}[uiDisplaySettings^windows.JOB_OBJECT_UILIMIT_DISPLAYSETTINGS]
	_ = [1]struct{}{}[uiGlobalAtoms^windows.JOB_OBJECT_UILIMIT_GLOBALATOMS]
	_ = [1]struct{}{}[uiDesktop^windows.JOB_OBJECT_UILIMIT_DESKTOP]
	_ = [1]struct{}{}[uiExitWindows^windows.JOB_OBJECT_UILIMIT_EXITWINDOWS]
	_ = [1]struct{}{}[createSuspended^windows.CREATE_SUSPENDED]
	_ = [1]struct{}{}[createNewProcessGroup^windows.CREATE_NEW_PROCESS_GROUP]
	_ = [1]struct{}{}[createUnicodeEnvironment^windows.CREATE_UNICODE_ENVIRONMENT]
	_ = [1]struct{}{}[extendedStartupinfoPresent^windows.EXTENDED_STARTUPINFO_PRESENT]
	_ = [1]struct{}{}[createNoWindow^windows.CREATE_NO_WINDOW]
)

// cpuRateControlInformation is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION,
// which x/sys/windows does not define: ControlFlags and a 32-bit union
// of which Run uses CpuRate.
type cpuRateControlInformation struct {
	ControlFlags uint32
	CPURate      uint32
}

// basicAccountingInformation is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
// which x/sys/windows does not define. Times are in 100 ns units.
type basicAccountingInformation struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// Available reports whether the system can create job objects.
func Available() error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("job objects: CreateJobObject: %w", err)
	}
	return windows.CloseHandle(job)
}

// setInformation is SetInformationJobObject with info kept on the heap
// and alive for the call.
//
//go:uintptrescapes
func setInformation(job windows.Handle, class uint32, info uintptr, size uintptr) error {
	_, err := windows.SetInformationJobObject(job, class, info, uint32(size))
	return err
}

// queryInformation is QueryInformationJobObject with info kept on the
// heap and alive for the call.
//
//go:uintptrescapes
func queryInformation(job windows.Handle, class int32, info uintptr, size uintptr) error {
	return windows.QueryInformationJobObject(job, class, info, uint32(size), nil)
}

// newJob creates an unnamed, non-inheritable job object with c's limits.
// Any failure closes it: the caller never runs a process in a job whose
// limits are not all set.
func newJob(c JobConfig) (job windows.Handle, err error) {
	job, err = windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("CreateJobObject: %w", err)
	}
	defer func() {
		if err != nil {
			windows.CloseHandle(job)
		}
	}()
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	ext.BasicLimitInformation.LimitFlags = c.LimitFlags
	ext.BasicLimitInformation.PerProcessUserTimeLimit = c.PerProcessUserTimeLimit
	ext.BasicLimitInformation.PerJobUserTimeLimit = c.PerJobUserTimeLimit
	ext.BasicLimitInformation.ActiveProcessLimit = c.ActiveProcessLimit
	ext.ProcessMemoryLimit = uintptr(c.ProcessMemoryLimit)
	ext.JobMemoryLimit = uintptr(c.JobMemoryLimit)
	if uint64(ext.ProcessMemoryLimit) != c.ProcessMemoryLimit || uint64(ext.JobMemoryLimit) != c.JobMemoryLimit {
		return 0, fmt.Errorf("%w: a memory limit does not fit this platform's address size", ErrInvalidPlan)
	}
	if err := setInformation(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&ext)), unsafe.Sizeof(ext)); err != nil {
		return 0, fmt.Errorf("set the job's limits: %w", err)
	}
	ui := windows.JOBOBJECT_BASIC_UI_RESTRICTIONS{UIRestrictionsClass: c.UIRestrictionsClass}
	if err := setInformation(job, windows.JobObjectBasicUIRestrictions, uintptr(unsafe.Pointer(&ui)), unsafe.Sizeof(ui)); err != nil {
		return 0, fmt.Errorf("set the job's UI restrictions: %w", err)
	}
	if c.CPURate != nil {
		rate := cpuRateControlInformation{ControlFlags: c.CPURate.ControlFlags, CPURate: c.CPURate.CPURate}
		if err := setInformation(job, windows.JobObjectCpuRateControlInformation, uintptr(unsafe.Pointer(&rate)), unsafe.Sizeof(rate)); err != nil {
			return 0, fmt.Errorf("set the job's CPU rate: %w", err)
		}
	}
	return job, nil
}

// terminate ends every process of the job, or at least process (when not
// zero) if the job cannot be terminated.
func terminate(job, process windows.Handle) {
	if err := windows.TerminateJobObject(job, KilledExitCode); err != nil && process != 0 {
		windows.TerminateProcess(process, KilledExitCode)
	}
}

// account fills exit's resource use from the job's accounting.
func account(job windows.Handle, exit *Exit) {
	var acct basicAccountingInformation
	if queryInformation(job, windows.JobObjectBasicAccountingInformation, uintptr(unsafe.Pointer(&acct)), unsafe.Sizeof(acct)) == nil {
		exit.UserTime = time.Duration(acct.TotalUserTime) * 100
		exit.KernelTime = time.Duration(acct.TotalKernelTime) * 100
		exit.Processes = acct.TotalProcesses
	}
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if queryInformation(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&ext)), unsafe.Sizeof(ext)) == nil {
		exit.PeakJobMemory = uint64(ext.PeakJobMemoryUsed)
	}
}
