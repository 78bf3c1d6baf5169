// Package bwrap builds and runs bubblewrap sandboxes for tier C.
//
// A Plan describes one execution: the command, its environment, the
// workspace bound read-write at /workspace and the directory below it the
// process starts in, extra read-only binds, the network mode, the seccomp
// filter, the rlimits, and the host uid bwrap runs as. Args turns it into
// bubblewrap's argv with every namespace unshared (user, pid, mount, ipc,
// uts, cgroup and, unless Network is set, net), --disable-userns,
// --new-session against TIOCSTI injection, --die-with-parent, --cap-drop
// ALL, a cleared environment and only /usr plus a short allowlist of /etc
// files from the host. The host's root is never bound, nor any socket
// directory; a plan's ProxySocket is bound alone, at /run/egress.sock.
//
// A Host, made once by NewHost and shared by an executor's plans, holds
// what does not change between calls: bwrap's path, the host's layout and
// a skeleton directory whose etc and dev become the sandbox's read-only
// /etc (generated passwd, group and hosts, with the allowlisted host files
// bound onto it) and /dev (null, zero, full, random and urandom bound from
// the host, and symlinks). A plan without a Host probes the host on every
// call and gets memfd-generated files and bwrap's --dev instead.
//
// Command starts bwrap. With Limits it passes --info-fd and --block-fd and
// sets the limits on the sandbox's pid 1 with prlimit(2) before that
// process forks the program (Cmd.Start has the details and the bubblewrap
// source they rest on). It also marks every descriptor of the calling
// process above 2 close-on-exec, because bubblewrap passes whatever it
// inherits on to the program; only the plan's ExtraFiles and ProgramFile
// reach the sandbox.
//
// Files the sandboxed process creates in the workspace belong, on the host,
// to the user that ran bwrap: the user namespace maps the sandbox's uid
// (65534 by default) to it. A daemon running as root sets HostUID and
// HostGID so that this user is an unprivileged one (the sandbox's processes
// then count against that uid's RLIMIT_NPROC, which the kernel never
// enforces for uid 0); better, run the executor as a dedicated unprivileged
// user, so that this owner has no other rights.
package bwrap
