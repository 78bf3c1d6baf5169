// Package procinit is the init process of a tier B sandbox: it applies
// limits to itself, starts the target, reaps every descendant and kills them
// all when the target ends.
//
// Go's os/exec can set neither resource limits nor a child subreaper for the
// process it starts, so the executor re-executes its own binary with the
// hidden subcommand Hidden (see Command). That process is the init. In a
// cgo build (the default with a C compiler) the init is C code that a
// constructor runs before the Go runtime starts (cinit_linux.go): starting
// the Go runtime and the binary's package initializers cost a tier B call
// about ten times a bare fork/exec. Command assembles everything in Go
// (the seccomp program, the rlimits, the bridge's address) and hands it to
// the init in a checked binary format (wire_linux.go).
//
// A binary built with CGO_ENABLED=0 (the Dockerfile builds with cgo) has no
// constructor and reaches Main, the same init in Go, slower, reading the
// same format; it finds leftover descendants by reading every process in
// /proc rather than the init's own subtree. It is kept only for such
// builds; `CGO_ENABLED=0 go test ./internal/sandbox/procinit/` tests it.
// Either way the init:
//
//  1. it reads the Spec from descriptor 3 and marks every descriptor above 2
//     close-on-exec, so the target inherits only stdin, stdout and stderr,
//     and makes itself non-dumpable, so that a target of its own uid (tier
//     C) cannot reach its descriptors through /proc and forge its report;
//  2. it becomes a child subreaper, so daemons that escape with setsid and a
//     double fork are reparented to it rather than to the system's init;
//  3. it sets the rlimits on itself (the target inherits them) and, when
//     asked, installs the internal/seccomp filter (inherited as well);
//  4. with Spec.Bridge, it listens on a loopback TCP address and relays
//     every connection to a Unix socket (tier C's path to the egress proxy);
//  5. it starts the target in a process group of its own, forwards SIGTERM,
//     SIGINT and SIGHUP to that group and reaps every child it is given;
//     with Spec.Lifeline it watches descriptor 5, a pipe only the launcher
//     writes to, and kills that group once the launcher is gone (or never
//     starts the target when it is gone already);
//  6. when the target ends it SIGKILLs every remaining descendant (found
//     by walking down /proc/PID/task/TID/children from itself: as a
//     subreaper it is an ancestor of all of them), reaps them, closes the
//     bridge, reports a Usage on descriptor 4 when one is open, and exits
//     with the target's status (128+signal when a signal ended it).
//
// Tier C runs the same init inside bubblewrap for every call: the spec
// comes from SpecFile on descriptor 3, the usage report goes to descriptor
// 4, the lifeline is descriptor 5, and the sandbox's limits are set on
// bubblewrap's pid 1 with Limits.ApplyTo before the init starts. There the
// init is not the launcher's child (bubblewrap's pid 1 is its parent), so
// its parent-death signal cannot stand for the launcher's death: the
// lifeline does.
//
// The binary's main dispatches to Main before doing anything else (in a
// cgo build the constructor has taken the process over before main runs):
//
//	if len(os.Args) > 1 && os.Args[1] == procinit.Hidden {
//		os.Exit(procinit.Main())
//	}
//
// Limits of the approach: descendants are found through the process tree, so
// if the init itself is SIGKILLed the target dies with it (its parent-death
// signal) but descendants that left the target's process group survive; only
// a cgroup contains those. RLIMIT_NPROC counts every process of the uid, see
// Limits.Processes.
package procinit
