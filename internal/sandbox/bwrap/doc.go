// Package bwrap builds and runs bubblewrap sandboxes for tier C.
//
// A Plan describes one execution: the command, its environment, the
// workspace bound read-write at /workspace, extra read-only binds, the
// network mode and the seccomp filter. Args turns it into bubblewrap's
// argv with every namespace unshared (user, pid, mount, ipc, uts, cgroup and,
// unless Network is set, net), --disable-userns, --new-session against
// TIOCSTI injection, --die-with-parent, --cap-drop ALL, a cleared
// environment and only /usr plus a short allowlist of /etc files from the
// host. The host's root is never bound, nor any socket directory.
//
// Files the sandboxed process creates in the workspace belong, on the host,
// to the user that ran bwrap: the user namespace maps the sandbox's uid
// (65534 by default) to the caller's uid. Run the executor as a dedicated
// unprivileged user, not root, so that this owner has no other rights.
package bwrap
