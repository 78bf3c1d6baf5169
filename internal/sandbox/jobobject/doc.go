// Package jobobject runs tier C processes on Windows inside a job object.
//
// A Plan describes one execution: the program, its arguments, its whole
// environment, its working directory, a timeout and resource limits.
// Pure methods compute everything the run sets, in plain Go types with
// the Windows constants defined here, so the plan and its tests build and
// run on every platform: Job gives the job object's limits and UI
// restrictions and the process creation flags, CommandLine the command
// line quoted by the rules the Microsoft C runtime uses to split it, and
// EnvBlock the sorted environment block.
//
// Run, on Windows, creates an unnamed job object, sets its limits
// (JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOBOBJECT_BASIC_UI_RESTRICTIONS
// and, when asked, a CPU rate hard cap), creates the process suspended,
// assigns it to the job, and only then resumes it, so that it runs no
// instruction outside the job. The process inherits only its three
// standard handles (NUL and two pipes). When the program exits, the
// timeout passes or the context ends, the whole job is terminated; the job
// handle is the executor's only one and the job kills its processes when
// it closes, so nothing outlives the executor either. Breakaway is never
// allowed.
//
// What a job object does not do: it is resource and lifetime containment,
// not isolation. The process runs with the executor's token, so it has
// the executor account's access to files, the registry and the network,
// and it can open other processes of that account, the executor among
// them. Isolation needs a different security context: an AppContainer or
// a restricted token with a low integrity level for files and objects,
// and Windows Filtering Platform filters (keyed on the AppContainer's SID)
// for the network. The Enforcement record lists only what the job object
// and the creation flags enforce, and names the rest as not enforced.
//
// On platforms other than Windows, Available and Run return an error
// wrapping errors.ErrUnsupported, so a caller that selects this backend
// there fails closed.
package jobobject
