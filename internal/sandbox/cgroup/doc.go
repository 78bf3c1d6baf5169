// Package cgroup contains sandboxed processes in cgroup v2 leaves: one leaf
// per process tree, limits for the controllers the host offers, a kill that
// reaches every process in the leaf whatever it did to its process group or
// parent, and a sweep that finds the leaves of executors that died.
//
// It is Linux-only and needs a cgroup2 file system the caller may write: on a
// pure cgroup v2 host that is /sys/fs/cgroup, on a hybrid host (cgroup v1
// controllers plus cgroup2 at /sys/fs/cgroup/unified) the unified mount.
// Open finds the mount in /proc/self/mountinfo and the caller's own cgroup
// in /proc/self/cgroup (the "0::<path>" line); when there is none, or it
// cannot be written, Open returns an error wrapping ErrUnavailable so the
// caller can fall back (to rlimits, for tier B) and record why.
//
// # Layout
//
// Every directory is below the caller's own cgroup, so a service manager
// that owns that cgroup (systemd with Delegate=yes, a container runtime)
// still sees, limits and kills the sandboxes as part of the service:
//
//	<mount><own cgroup>/<Options.Name>            the parent, shared by executors
//	    x-<pid>-<starttime>/                      one owner per executor process
//	        <leaf>/                               one leaf per sandboxed tree
//
// Options.Path replaces "<own cgroup>/<Options.Name>" with a directory an
// administrator delegated elsewhere.
//
// Processes live only in leaves. cgroup v2's "no internal processes" rule
// forbids a non-root cgroup that holds processes to enable domain
// controllers (memory, pids, ...) for its children: the parent and the
// owner directories never hold processes, so they can. The caller's own
// cgroup is the exception this package cannot fix. Open enables memory,
// pids and cpu in its cgroup.subtree_control when they are offered; the
// kernel refuses (EBUSY) when that cgroup holds processes and is not the
// root of the hierarchy — the case of a systemd service whose main process
// lives in the service's cgroup. Leaves then still give the kill, the CPU
// figures and the sweep, but no limits; Controllers and Group.Record say so.
// To get limits there, delegate the service's cgroup and move the daemon
// into a child of it (systemd: Delegate=yes with DelegateSubgroup=), then
// point Options.Path at another child of the service's cgroup.
//
// # Owners and the sweep
//
// The owner directory is named after the executor process that made it:
// its pid and its start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which together name one process for the life of the
// machine even when pids are reused. A Manager makes its owner directory
// when it makes its first leaf and removes it when its last leaf is
// removed. Manager.Sweep, run by an executor when it starts, kills and
// removes the leaves of every owner whose process is gone (or is a zombie,
// or is another process that reused the pid), so sandboxes that outlived an
// executor killed with SIGKILL do not live on. Owners are judged in the
// caller's pid namespace: executors sharing a parent must share one.
//
// # Kill
//
// Group.Kill writes 1 to cgroup.kill (Linux 5.14), which SIGKILLs every
// process of the leaf and of its descendants at once, including those
// that left the process group with setsid and daemons that forked twice.
// Without cgroup.kill it freezes the leaf (cgroup.freeze, Linux 5.2),
// SIGKILLs every pid in cgroup.procs, thaws it, and repeats until the leaf
// is empty; without cgroup.freeze it repeats the SIGKILL pass alone, which
// a process forking as fast as it is killed could outrun until killTimeout.
//
// Processes start inside their leaf with clone3's CLONE_INTO_CGROUP
// (Linux 5.7; syscall.SysProcAttr UseCgroupFD with Group.FD), so there is
// no moment when a child runs outside it.
package cgroup
