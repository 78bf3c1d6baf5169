// Package seccomp builds the seccomp-BPF filter that sandboxed processes run under.
//
// The filter is a classic BPF program (struct sock_filter[]) assembled in
// pure Go, without libseccomp or cgo. It is a deny list: every system call
// not named below is allowed. Build returns the program for the running
// GOARCH and BuildFor for a named one ("amd64", "arm64"); the tier C
// executor hands Filter.Bytes to bubblewrap's --seccomp FD, and the tier B
// init helper calls Filter.Install just before execve.
//
// # Policy
//
// In the order the program checks it:
//
//   - A seccomp_data.arch other than the native audit architecture
//     (AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64) kills the whole process
//     (SECCOMP_RET_KILL_PROCESS): the i386 int 0x80 and aarch32 compat
//     entries have their own syscall numbers and would bypass every rule.
//   - On amd64, a syscall number with the x32 bit (0x40000000) fails with
//     EPERM: x32 numbers alias native ones under the same audit arch.
//   - The syscalls of Denied fail with EPERM (SECCOMP_RET_ERRNO), so a
//     program gets a clean error rather than a signal.
//   - clone3 fails with ENOSYS: its flags live in memory that a filter
//     cannot read, and ENOSYS makes glibc fall back to clone, which is
//     checked.
//   - clone and unshare fail with EPERM when their flags (argument 0 on
//     both architectures) ask for any new namespace (CLONE_NEWNS, _NEWCGROUP,
//     _NEWUTS, _NEWIPC, _NEWUSER, _NEWPID, _NEWNET, and for unshare
//     _NEWTIME, which clone cannot take because it overlaps the exit signal).
//   - ioctl fails with EPERM for TIOCSTI and TIOCLINUX (CVE-2017-5226).
//   - personality fails with EPERM unless the persona is 0 (PER_LINUX) or
//     0xffffffff (the query).
//   - socket and socketpair fail with EPERM unless the family is AF_UNIX,
//     or AF_INET/AF_INET6 when Options.AllowInet is set; with
//     Options.DenyUnixSocket socket refuses AF_UNIX too (socketpair keeps
//     it). AF_NETLINK is denied either way; glibc's getaddrinfo copes by
//     assuming both IPv4 and IPv6 are configured.
//
// Rules lists the whole policy, conditions included, for an attestation's
// enforcement record.
//
// Every argument comparison loads only the low 32 bits of the 64-bit
// argument. The kernel truncates these arguments (ioctl's cmd, personality,
// socket's family, clone's flags) to 32 bits itself, so a caller cannot
// slip a denied value past the filter by setting high bits (CVE-2019-10063).
//
// Besides the set the sandbox design asks for, the filter denies
// mount_setattr and open_tree_attr (siblings of the mount API calls),
// quotactl_fd (of quotactl), pidfd_getfd (which copies another process's
// file descriptors under the same check as ptrace) and, on amd64, uselib.
//
// # Installing
//
// Install sets PR_SET_NO_NEW_PRIVS and loads the program with
// seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC). TSYNC applies
// the filter (and no_new_privs) to every thread of the process, so the
// thread that later calls execve is filtered whichever one it is; the
// caller should still lock its OS thread and exec right away. Filters
// cannot be removed: install only in a process that is about to exec the
// sandboxed program.
package seccomp
