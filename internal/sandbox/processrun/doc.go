// Package processrun is the process.run tool: native programs under tier B (init helper + rlimits + seccomp) or tier C (bubblewrap).
//
// A call is parsed and checked by internal/procinput, runs in a workspace of
// its own, <WorkspaceRoot>/<principal>/<run_id> (a request without a run:
// <WorkspaceRoot>/<principal>/_req-<request id>), and is killed (SIGTERM,
// KillGrace, SIGKILL, the whole process tree) when its timeout passes, its
// context is cancelled or its output exceeds OutputLimit.
//
// Tiers:
//
//   - B re-executes the execledger binary (Config.Self) as the
//     internal/sandbox/procinit init: rlimits, the internal/seccomp filter
//     (which refuses AF_INET/AF_INET6 sockets, so tier B is offline whatever
//     the egress mode), an unprivileged UID/GID when the daemon runs as root,
//     a child subreaper that kills every descendant when the target ends.
//     All runs share Config.UID: two runs' workspaces are separate
//     directories and procinput refuses arguments naming the other one, but
//     a program that builds a path at run time could reach another run's
//     workspace under the same uid. Per-run uids (or tier C) close that.
//     RLIMIT_NPROC counts every process of the uid on the machine, so
//     concurrent runs share Limits.Processes.
//   - C runs bubblewrap (internal/sandbox/bwrap): namespaces, only the
//     run's workspace bound at /workspace, the seccomp filter, no
//     capabilities. The process always starts in /workspace, so a cwd below
//     the workspace root is refused for now; HOME is /workspace.
//
// Egress: "none" and "preflight" are decided by procinput. Tier C never
// shares the host network (its loopback services, PostgreSQL included,
// would be reachable): every tier C run is offline — its own network
// namespace, inet sockets refused by seccomp — until egress goes through
// the allowlisting proxy on bwrap.Plan.ProxySocket, the next step. "strict"
// fails closed in tier B (egress_denied, as in Palyra); in tier C it refuses
// a request that declares egress hosts, because nothing could reach them yet.
//
// Output: stdout and stderr share one budget, Config.OutputLimit, read in 4
// KiB chunks. Past the budget the tree is stopped, the output read so far is
// kept and marked truncated, and the call fails with quota_exceeded
// (Palyra discards everything: its gap #7). Output is stored as JSON
// strings: invalid UTF-8 is replaced with U+FFFD (and stdout_lossy /
// stderr_lossy set), control characters and NUL are JSON-escaped, and the
// text goes through internal/redact before it is stored.
package processrun
