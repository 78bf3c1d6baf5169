// Package sandboxexec builds and runs macOS Seatbelt sandboxes for tier C:
// the program runs under /usr/bin/sandbox-exec with a profile rendered
// from a Plan.
//
// The profile starts from (deny default) and allows only what the plan
// names: executing the program (and the plan's Exec list), forking when
// Fork is set, reading a fixed list of operating system directories and
// the plan's ReadOnly paths, reading and writing the workspace and the
// temporary directory, signals and process information within the
// sandbox itself, a fixed list of read-only sysctls and one directory
// service. The network is closed, or, when Network is set, open only to
// outbound TCP connections to the egress proxy's port on the loopback
// interface. Unix sockets (the host's PostgreSQL among them), listening
// and every other Mach service stay denied. Rendering is a pure function
// of the plan, so the profile can be recorded and tested on any platform.
//
// Seatbelt matches the resolved path of a file, so every path in a Plan
// must be the canonical one (/private/tmp/x, not /tmp/x); CheckPaths
// verifies that on the host, and Command calls it.
//
// What this backend does not enforce, and the Enforcement record says so:
// resource limits (CPU time, memory, process count), a separate user (the
// program runs as the executor's user, so run the executor as a dedicated
// unprivileged user), and containment of a child that moves itself to a
// new process group or session, which the group kill at the end of a run
// then misses. sandbox-exec and sandbox_init are marked deprecated by
// Apple but remain the mechanism that Chromium, Bazel and other tools use
// on macOS.
//
// Commands run only on macOS; elsewhere Available, Command and Run return
// an error wrapping errors.ErrUnsupported, so a caller that selects this
// backend on another platform fails closed.
package sandboxexec
