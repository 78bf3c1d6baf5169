package jobobject

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Labels recorded in events and attestations, after Palyra's.
const (
	// Executor is the executor label of a tier C run under this backend.
	Executor = "sandbox_tier_c_windows_job_object"
	// Backend is the sandbox_backend and the enforcement record's backend.
	Backend = "windows_job_object"
)

// ErrInvalidPlan is wrapped by every error a malformed Plan produces.
var ErrInvalidPlan = errors.New("invalid job object plan")

// ErrUnsupported is wrapped by every runner error on a platform other
// than Windows. It wraps errors.ErrUnsupported.
var ErrUnsupported = fmt.Errorf("job object sandboxes need Windows: %w", errors.ErrUnsupported)

// Plan is one tier C execution in a job object.
type Plan struct {
	// Program is the drive-absolute path of an .exe or .com file, such
	// as C:\Windows\System32\where.exe. Batch files are refused: Windows
	// runs them through cmd.exe, which splits the command line by other
	// rules than the ones CommandLine quotes for.
	Program string
	// ProgramArgs are its arguments, without argv[0].
	ProgramArgs []string
	// Env is the whole environment, as KEY=VALUE: the process gets
	// nothing else. Names are case-insensitive on Windows, so two
	// entries whose names differ only in case are refused. Many programs
	// need SystemRoot (Winsock and the crypto libraries find their DLLs
	// through it); the caller passes it when they do.
	Env []string
	// Dir is the drive-absolute working directory.
	Dir string
	// Timeout, when positive, terminates the job that long after the
	// process starts.
	Timeout time.Duration
	// Limits bound the job's resources.
	Limits Limits
}

// Limits are the job object's resource limits. A zero field sets no
// limit, and the Enforcement record then says "none".
type Limits struct {
	// ActiveProcesses is the most processes the job may hold at once; a
	// process that would exceed it is terminated as it is created.
	ActiveProcesses uint32
	// JobMemory bounds the committed memory of all the job's processes
	// together, and ProcessMemory that of each one, in bytes. An
	// allocation past a bound fails; the process is not killed.
	JobMemory, ProcessMemory uint64
	// ProcessUserTime bounds the user-mode CPU time of each process, and
	// JobUserTime that of all of them together; past either the system
	// terminates the process (respectively every process of the job).
	// Kernel-mode time is not counted.
	ProcessUserTime, JobUserTime time.Duration
	// CPURate is a hard cap on the job's share of all processors, in
	// hundredths of a percent: 1 to 10000 (5000 is half the machine).
	CPURate uint32
}

// Exit is how a run ended.
type Exit struct {
	// Code is the process's exit code; KilledExitCode when the executor
	// terminated the job.
	Code uint32
	// TimedOut is set when Timeout passed and the job was terminated.
	TimedOut bool
	// Wall is the time from resuming the process to its end.
	Wall time.Duration
	// UserTime and KernelTime are the CPU time of every process that ran
	// in the job; Processes is how many ran.
	UserTime, KernelTime time.Duration
	Processes            uint32
	// PeakJobMemory is the job's peak committed memory, in bytes.
	PeakJobMemory uint64
}

// KilledExitCode is the exit code of the processes the executor
// terminates: 128 plus SIGKILL's number, as a shell would report it.
const KilledExitCode = 137

// reservedNames are the DOS device names that Win32 maps to a device
// whatever the directory and extension.
var reservedNames = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true,
	"COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
}

// checkPath accepts a drive-absolute Windows path (C:\dir\file) whose
// components Win32 does not rewrite: no empty, "." or ".." component,
// none ending in a dot or a space (Win32 strips those), no DOS device
// name, no character Windows forbids in names, no second colon (an
// alternate data stream), no control character, valid UTF-8. UNC and
// device paths (\\server\share, \\?\, \\.\) are refused.
func checkPath(what, path string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s %q %s", ErrInvalidPlan, what, path, why)
	}
	if !utf8.ValidString(path) || strings.ContainsFunc(path, unicode.IsControl) {
		return bad("contains a control character or is not UTF-8")
	}
	if len(path) < 4 || path[1] != ':' || path[2] != '\\' || !('A' <= path[0] && path[0] <= 'Z' || 'a' <= path[0] && path[0] <= 'z') {
		return bad(`is not a drive-absolute path like C:\dir`)
	}
	for _, c := range strings.Split(path[3:], `\`) {
		switch {
		case c == "" || c == "." || c == "..":
			return bad("has an empty, . or .. component")
		case strings.ContainsAny(c, `<>:"/|?*`):
			return bad(`has a character Windows forbids in names (<>:"/|?*)`)
		case strings.HasSuffix(c, ".") || strings.HasSuffix(c, " "):
			return bad("has a component ending in a dot or a space")
		}
		base, _, _ := strings.Cut(c, ".")
		if reservedNames[strings.ToUpper(strings.TrimRight(base, " "))] {
			return bad("names a DOS device")
		}
	}
	return nil
}

// validate checks the plan's shape; it does not touch the file system.
func (p Plan) validate() error {
	if err := checkPath("program", p.Program); err != nil {
		return err
	}
	if ext := strings.ToLower(p.Program[max(0, len(p.Program)-4):]); ext != ".exe" && ext != ".com" {
		return fmt.Errorf("%w: program %q is not an .exe or .com file", ErrInvalidPlan, p.Program)
	}
	if err := checkPath("working directory", p.Dir); err != nil {
		return err
	}
	for i, a := range p.ProgramArgs {
		if strings.ContainsRune(a, 0) || !utf8.ValidString(a) {
			return fmt.Errorf("%w: argument %d contains NUL or is not UTF-8", ErrInvalidPlan, i+1)
		}
	}
	if _, err := p.commandLine(); err != nil {
		return err
	}
	if _, err := p.environment(); err != nil {
		return err
	}
	l := p.Limits
	if l.ProcessUserTime < 0 || l.JobUserTime < 0 || p.Timeout < 0 {
		return fmt.Errorf("%w: negative time limit", ErrInvalidPlan)
	}
	if l.CPURate > 10000 {
		return fmt.Errorf("%w: CPU rate %d is over 10000 (all processors)", ErrInvalidPlan, l.CPURate)
	}
	return nil
}
