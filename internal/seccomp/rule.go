package seccomp

import "fmt"

// Constants of the conditional rules; identical on amd64 and arm64.
const (
	// cloneNamespaceFlags are the CLONE_NEW* flags clone accepts: NEWNS,
	// NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID and NEWNET.
	cloneNamespaceFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
	// cloneNewTime is CLONE_NEWTIME, which only unshare and clone3 take:
	// for clone its bit is part of the exit signal.
	cloneNewTime = 0x00000080

	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541c

	personaLinux = 0x00000000
	personaQuery = 0xffffffff

	afUnix  = 1
	afInet  = 2
	afInet6 = 10

	errnoEPERM  = 1
	errnoENOSYS = 38
)

// Actions as Rule.Action spells them.
const (
	ActionKillProcess = "KILL_PROCESS"
	ActionEPERM       = "ERRNO(EPERM)"
	ActionENOSYS      = "ERRNO(ENOSYS)"
)

// Rule is one entry of the policy, for an attestation's enforcement record.
type Rule struct {
	// Syscall is the syscall's name, or "*" for a rule on every syscall.
	Syscall string `json:"syscall"`
	// When is the condition under which the rule applies; empty when it
	// always does.
	When string `json:"when,omitempty"`
	// Action is ActionKillProcess, ActionEPERM or ActionENOSYS.
	Action string `json:"action"`
}

// deniedSyscalls are the syscalls that always fail with EPERM, in the
// order the program tests them. Names missing from an architecture's table
// (iopl, ioperm and uselib on arm64) are left out there.
func deniedSyscalls() []string {
	return []string{
		// Inspecting or changing other processes.
		"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
		// Kernel attack surface.
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"bpf", "perf_event_open", "userfaultfd",
		"keyctl", "add_key", "request_key",
		// Mounts and namespaces.
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
		"fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr", "setns",
		// Handles that bypass path-based confinement.
		"open_by_handle_at", "name_to_handle_at",
		// Machine administration.
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd",
		"lookup_dcookie", "syslog", "iopl", "ioperm", "vhangup", "uselib",
	}
}

// rules describes the program compile builds for t and opts, in the order
// the program applies them.
func rules(t archTable, opts Options) []Rule {
	r := []Rule{{Syscall: "*", When: "arch != " + t.auditName, Action: ActionKillProcess}}
	if t.x32 {
		r = append(r, Rule{Syscall: "*", When: fmt.Sprintf("nr & %#x (x32 ABI)", x32Bit), Action: ActionEPERM})
	}
	for _, name := range deniedSyscalls() {
		if _, ok := t.syscalls[name]; ok {
			r = append(r, Rule{Syscall: name, Action: ActionEPERM})
		}
	}
	families := "AF_UNIX"
	if opts.AllowInet {
		families = "AF_UNIX, AF_INET, AF_INET6"
	}
	socketFamilies := families
	if opts.DenyUnixSocket {
		socketFamilies = ""
		if opts.AllowInet {
			socketFamilies = "AF_INET, AF_INET6"
		}
	}
	return append(r,
		Rule{Syscall: "clone3", Action: ActionENOSYS},
		Rule{Syscall: "clone", When: "flags & CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}", Action: ActionEPERM},
		Rule{Syscall: "unshare", When: "flags & CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}", Action: ActionEPERM},
		Rule{Syscall: "ioctl", When: "cmd in {TIOCSTI, TIOCLINUX}", Action: ActionEPERM},
		Rule{Syscall: "personality", When: "persona not in {0, 0xffffffff}", Action: ActionEPERM},
		socketRule(socketFamilies),
		Rule{Syscall: "socketpair", When: "family not in {" + families + "}", Action: ActionEPERM},
	)
}

// socketRule is socket's rule: EPERM outside families, or always when
// families is empty.
func socketRule(families string) Rule {
	if families == "" {
		return Rule{Syscall: "socket", When: "any family (AF_UNIX too: DenyUnixSocket)", Action: ActionEPERM}
	}
	return Rule{Syscall: "socket", When: "family not in {" + families + "}", Action: ActionEPERM}
}
