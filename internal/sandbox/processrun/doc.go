// Package processrun is the process.run tool: native programs under tier B (init helper + rlimits + seccomp) or tier C (bubblewrap).
//
// A call is parsed and checked by internal/procinput in Tool.Prepare, at
// claim time and before the run's budget is charged (a refusal ends the
// request denied), and checked again against the file system in Tool.Run
// just before the spawn. It runs in a workspace of its own, <WorkspaceRoot>/<principal>/<run_id> (a request without a run:
// <WorkspaceRoot>/<principal>/_req-<request id>), and is killed (SIGTERM,
// KillGrace, SIGKILL, the whole process tree) when its timeout passes, its
// context is cancelled or its output exceeds OutputLimit.
//
// Tiers:
//
//   - B re-executes the execledger binary (Config.Self) as the
//     internal/sandbox/procinit init: rlimits, the internal/seccomp filter
//     (which refuses inet sockets, so tier B is offline whatever the egress
//     mode, and Unix sockets, so the host's — PostgreSQL's among them — are
//     out of reach), empty private /tmp, /var/tmp and /dev/shm in a mount
//     namespace of its own, a child subreaper that kills every descendant
//     when the target ends. Each run's programs run as a uid of their own
//     (Config.UIDBase, UIDCount; uid.go), so runs cannot signal or read each
//     other and RLIMIT_NPROC bounds one run. Each process starts in a cgroup
//     v2 leaf of its own where the host offers one (cgroup.go), killed as a
//     whole when the init exits. Tier B needs a root daemon: New refuses
//     otherwise, since the programs would run as the daemon itself.
//   - C runs bubblewrap (internal/sandbox/bwrap): new user, pid, mount,
//     ipc, uts, cgroup and net namespaces, no nested user namespaces, no
//     capabilities, a new session, the daemon's death kills it, a cleared
//     environment, uid 65534, /usr and a few /etc files read-only, the
//     run's workspace read-write at /workspace, a private /tmp, the seccomp
//     filter. The process starts in the cwd the call names, mapped to the
//     same place under /workspace; HOME is /workspace. Config.Limits apply
//     as in tier B: they are set with prlimit(2) on bubblewrap's pid 1
//     before it forks the program (bwrap.Cmd.Start), so the program and all
//     it starts inherit them. When the daemon runs as root, bubblewrap runs
//     as Config.UID/GID on the host and the workspace is chowned to them:
//     the sandbox is never host uid 0, for which the kernel does not enforce
//     RLIMIT_NPROC. The kernel counts RLIMIT_NPROC per user namespace, so
//     in tier C it bounds one sandbox (the init's threads count too). The
//     program runs under the procinit init (sandboxinit.go): Config.Self
//     executed from a descriptor (its path need not be visible in the
//     sandbox, but the file must be executable by Config.UID), its spec on
//     a sealed memfd. The init reports the program's exit status, signal
//     and usage (bubblewrap's monitor exits without reaping the sandbox,
//     so its own rusage is all the executor would see), kills what the
//     program left behind, and holds a lifeline to the executor: when the
//     executor dies the program's tree dies with it, which bubblewrap's
//     --die-with-parent does not ensure while it sets the sandbox up.
//     bubblewrap starts in a cgroup v2 leaf of its own where the host
//     offers one (cgroup.go), as tier B's init does: a sandbox that the
//     executor's death left stuck in bubblewrap's setup, before the init
//     exists, is killed by the next executor's SweepOrphans.
//
// Egress. Tier C never shares the host's network namespace: its loopback
// services (PostgreSQL included) would be reachable. With "none" and
// "preflight" (procinput's text checks) a tier C run is offline: loopback
// only, and seccomp refuses inet sockets. With "strict" and declared hosts
// (requested_egress_hosts, which procinput has checked against the
// policy's allowlist), each call gets its own internal/egress proxy on a
// Unix socket with a random name in Config.EgressSocketDir, bind-mounted
// alone at /run/egress.sock. The init listens on 127.0.0.1:3128 in the
// sandbox's own network namespace and relays to that socket; the program
// gets HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and their lower-case forms)
// set to http://127.0.0.1:3128 and NO_PROXY empty. The seccomp filter then allows inet sockets, which reach
// only the sandbox's loopback. The proxy admits exactly the declared hosts
// (a host the program did not declare is refused, even if the policy
// allowlists it) on Config.EgressPorts, refuses every address that is
// private, loopback or otherwise special unless Config.EgressPrivateRanges
// covers it, dials the address it checked, and reports every connection
// attempt, allowed or refused, as an egress.connection event in the
// Result (at most 500 per call; the rest are counted in Resources). Strict
// egress without declared hosts runs offline. Tier B cannot confine a
// process's network, so "strict" fails closed there (egress_denied, as in
// Palyra).
//
// Background processes (background.go, proctools.go; Config.Background):
// a call with "background" returns a handle once the process has lived
// BackgroundConfig.StartupCheck, and a supervisor goroutine, on an OS
// thread of its own for the process's parent-death signal, keeps it until
// it ends, its lifetime passes, process.stop asks, its run ends (run_owned)
// or the tool is closed. The handle is the stream process:<handle> and a
// ledger.processes row; the end, with output and usage, is
// process.ended. ProcessTool (process.status, process.stop) takes only a
// handle of the caller's principal and run. Processes of dead executors on
// this host are recorded (lost, or ended/orphaned when one had to be
// killed) when a Tool starts and every OrphanScan.
//
// Workspaces (workspace.go; Config.Workspaces): a run's workspace is
// deleted, and its tier B uid freed, once the ledger shows the run idle
// for the TTL (no open request, no running background process, the last
// finish TTL old) and no process on the host works in it or runs as its
// uid. The decision is taken under the workspace root's lock, which a
// call holds while it makes its workspace; the removal follows no link.
//
// Output: stdout and stderr share one budget, Config.OutputLimit, read in 4
// KiB chunks. Past the budget the tree is stopped, the output read so far is
// kept and marked truncated, and the call fails with quota_exceeded
// (Palyra discards everything: its gap #7). Output is stored as JSON
// strings: invalid UTF-8 and NUL (which PostgreSQL's jsonb and text cannot
// hold) are replaced with U+FFFD (and stdout_lossy / stderr_lossy set),
// other control characters are JSON-escaped, and the text goes through
// internal/redact before it is stored.
//
// Platforms. All of the above is Linux's (files built with the linux tag).
// On macOS and Windows the package is a smaller tool (tool_native.go):
// tier C only, foreground only, under sandbox-exec (internal/sandbox/
// sandboxexec) or a job object (internal/sandbox/jobobject). What the
// backend cannot enforce is refused, never run weaker (native.go): tier B,
// a workspace TTL and, on Windows, strict egress are configuration errors;
// background calls are capability_denied and strict egress to declared
// hosts egress_denied. On any other platform New fails.
package processrun
