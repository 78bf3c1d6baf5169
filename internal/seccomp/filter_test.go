package seccomp

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// Expected seccomp return values, spelled independently of the package.
const (
	wantAllow  = 0x7fff0000
	wantEPERM  = 0x00050001
	wantENOSYS = 0x00050026
	wantKill   = 0x80000000
)

// requiredDenials is the deny set the sandbox design asks for, listed
// independently of deniedSyscalls.
var requiredDenials = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "mount",
	"umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
	"setns", "userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff", "reboot", "acct",
	"quotactl", "lookup_dcookie", "syslog", "iopl", "ioperm", "vhangup",
}

// x86Only are the syscalls of the policy aarch64 does not have.
var x86Only = []string{"iopl", "ioperm", "uselib"}

// allowedSamples are ordinary syscalls by architecture.
var allowedSamples = map[string]map[string]uint32{
	"amd64": {"read": 0, "write": 1, "openat": 257, "execve": 59, "exit_group": 231, "getpid": 39},
	"arm64": {"read": 63, "write": 64, "openat": 56, "execve": 221, "exit_group": 94, "getpid": 172},
}

var auditArches = map[string]uint32{"amd64": 0xc000003e, "arm64": 0xc00000b7}

// harness runs one filter's program, decoded from Filter.Bytes, in the
// test interpreter.
type harness struct {
	t      *testing.T
	goarch string
	f      *Filter
	prog   []Instruction
}

func newHarness(t *testing.T, goarch string, opts Options) *harness {
	t.Helper()
	f, err := BuildFor(goarch, opts)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := decodeProgram(f.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, goarch: goarch, f: f, prog: prog}
}

// eval runs the program over d.
func (h *harness) eval(d seccompData) uint32 {
	h.t.Helper()
	ret, err := runBPF(h.prog, d)
	if err != nil {
		h.t.Fatalf("%s: %v", h.goarch, err)
	}
	return ret
}

// nr returns the number of the named syscall.
func (h *harness) nr(name string) uint32 {
	h.t.Helper()
	if n, ok := allowedSamples[h.goarch][name]; ok {
		return n
	}
	t, err := lookupArch(h.goarch)
	if err != nil {
		h.t.Fatal(err)
	}
	n, ok := t.syscalls[name]
	if !ok {
		h.t.Fatalf("%s has no syscall %q", h.goarch, name)
	}
	return n
}

// expect checks the result of the named syscall with args.
func (h *harness) expect(want uint32, name string, args ...uint64) {
	h.t.Helper()
	d := seccompData{nr: h.nr(name), arch: auditArches[h.goarch], ip: 0x401000}
	copy(d.args[:], args)
	if got := h.eval(d); got != want {
		h.t.Errorf("%s: %s(%#x) = %#x, want %#x", h.goarch, name, args, got, want)
	}
}

// forArches runs fn for each supported architecture and both options.
func forArches(t *testing.T, fn func(t *testing.T, h *harness, opts Options)) {
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, opts := range []Options{{}, {AllowInet: true}, {DenyUnixSocket: true}, {AllowInet: true, DenyUnixSocket: true}} {
			t.Run(fmt.Sprintf("%s/inet=%t/nounix=%t", goarch, opts.AllowInet, opts.DenyUnixSocket), func(t *testing.T) {
				fn(t, newHarness(t, goarch, opts), opts)
			})
		}
	}
}

func TestDeniedSyscallsFailWithEPERM(t *testing.T) {
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		for _, name := range requiredDenials {
			if h.goarch == "arm64" && slices.Contains(x86Only, name) {
				continue
			}
			h.expect(wantEPERM, name)
			h.expect(wantEPERM, name, 1, 2, 3, 4, 5, 6)
		}
		for _, name := range h.f.Denied() {
			h.expect(wantEPERM, name)
		}
	})
}

func TestDeniedListsRequiredSyscalls(t *testing.T) {
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		denied := h.f.Denied()
		for _, name := range requiredDenials {
			missing := h.goarch == "arm64" && slices.Contains(x86Only, name)
			if slices.Contains(denied, name) == missing {
				t.Errorf("%s: Denied() contains %q = %t, want %t", h.goarch, name, !missing, !missing)
			}
		}
		if !slices.IsSorted(denied) {
			t.Errorf("Denied() is not sorted: %q", denied)
		}
		for _, conditional := range []string{"clone", "unshare", "ioctl", "personality", "socket", "clone3", "read"} {
			if slices.Contains(denied, conditional) {
				t.Errorf("Denied() contains %q, which is not always denied", conditional)
			}
		}
	})
}

func TestOrdinarySyscallsAllowed(t *testing.T) {
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		for name := range allowedSamples[h.goarch] {
			h.expect(wantAllow, name, 3, 0, 0)
		}
	})
}

// TestOnlyPolicySyscallsAreTouched runs every syscall number up to 1023
// with zero arguments: all but the policy's are allowed.
func TestOnlyPolicySyscallsAreTouched(t *testing.T) {
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		tbl, _ := lookupArch(h.goarch)
		want := make(map[uint32]uint32)
		for _, name := range h.f.Denied() {
			want[tbl.syscalls[name]] = wantEPERM
		}
		want[tbl.syscalls["clone3"]] = wantENOSYS
		// family 0 (AF_UNSPEC) is not allowed.
		want[tbl.syscalls["socket"]] = wantEPERM
		want[tbl.syscalls["socketpair"]] = wantEPERM
		for nr := uint32(0); nr < 1024; nr++ {
			w, ok := want[nr]
			if !ok {
				w = wantAllow
			}
			if got := h.eval(seccompData{nr: nr, arch: tbl.auditArch}); got != w {
				t.Errorf("%s: syscall %d (%s) = %#x, want %#x", h.goarch, nr, tbl.name(nr), got, w)
			}
		}
	})
}

func TestCloneNamespaceFlags(t *testing.T) {
	const (
		sigchld      = 17
		threadFlags  = 0x00000100 | 0x00000200 | 0x00000400 | 0x00000800 | 0x00010000 | 0x00040000 | 0x00080000 | 0x00100000 | 0x00200000
		cloneNewuser = 0x10000000
	)
	newFlags := map[string]uint64{
		"NEWNS": 0x00020000, "NEWCGROUP": 0x02000000, "NEWUTS": 0x04000000, "NEWIPC": 0x08000000,
		"NEWUSER": 0x10000000, "NEWPID": 0x20000000, "NEWNET": 0x40000000,
	}
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		h.expect(wantAllow, "clone", sigchld)
		h.expect(wantAllow, "clone", threadFlags)
		h.expect(wantAllow, "clone", 0x00004000|0x00000100|sigchld) // vfork
		h.expect(wantEPERM, "clone", cloneNewuser|sigchld)
		h.expect(wantEPERM, "clone", 1<<40|cloneNewuser)
		h.expect(wantAllow, "unshare", 0x00000400|0x00000200|0x00040000) // FILES|FS|SYSVSEM
		h.expect(wantEPERM, "unshare", 0x00000080)                       // NEWTIME
		for name, flag := range newFlags {
			t.Run(name, func(t *testing.T) {
				sub := *h
				sub.t = t
				sub.expect(wantEPERM, "clone", flag|sigchld)
				sub.expect(wantEPERM, "unshare", flag)
			})
		}
		h.expect(wantENOSYS, "clone3", 0x7ffc0000, 88)
		h.expect(wantENOSYS, "clone3", 0, 0)
	})
}

func TestIoctlTerminalInjection(t *testing.T) {
	const tiocsti, tioclinux, tcgets, fionread = 0x5412, 0x541c, 0x5401, 0x541b
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		h.expect(wantEPERM, "ioctl", 0, tiocsti, 0x7ffc0000)
		h.expect(wantEPERM, "ioctl", 0, 1<<32|tiocsti) // CVE-2019-10063
		h.expect(wantEPERM, "ioctl", 0, tioclinux)
		h.expect(wantAllow, "ioctl", 0, tcgets)
		h.expect(wantAllow, "ioctl", 0, fionread)
		h.expect(wantAllow, "ioctl", tiocsti, 0) // fd, not cmd
	})
}

func TestPersonality(t *testing.T) {
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		h.expect(wantAllow, "personality", 0)
		h.expect(wantAllow, "personality", 0xffffffff)
		h.expect(wantEPERM, "personality", 0x0008)    // PER_LINUX32
		h.expect(wantEPERM, "personality", 0x0040000) // ADDR_NO_RANDOMIZE
		h.expect(wantEPERM, "personality", 0xfffffffe)
	})
}

func TestSocketFamilies(t *testing.T) {
	const afUnix, afInet, afInet6, afNetlink, afPacket = 1, 2, 10, 16, 17
	forArches(t, func(t *testing.T, h *harness, opts Options) {
		inet := uint32(wantEPERM)
		if opts.AllowInet {
			inet = wantAllow
		}
		for _, call := range []string{"socket", "socketpair"} {
			unix := uint32(wantAllow)
			if opts.DenyUnixSocket && call == "socket" {
				unix = wantEPERM
			}
			h.expect(unix, call, afUnix, 1, 0)
			h.expect(inet, call, afInet, 1, 0)
			h.expect(inet, call, afInet6, 2, 0)
			h.expect(wantEPERM, call, afNetlink, 3, 0)
			h.expect(wantEPERM, call, afPacket, 3, 0)
			h.expect(wantEPERM, call, 0, 1, 0)
		}
	})
}

func TestForeignArchKills(t *testing.T) {
	foreign := []uint32{0x40000003 /* I386 */, 0x40000028 /* ARM */, 0xc00000b7, 0xc000003e, 0xc00000f3 /* RISCV64 */, 0}
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		for _, arch := range foreign {
			if arch == auditArches[h.goarch] {
				continue
			}
			for _, nr := range []uint32{0, 1, h.nr("getpid"), h.nr("ptrace")} {
				if got := h.eval(seccompData{nr: nr, arch: arch}); got != wantKill {
					t.Errorf("%s: syscall %d under arch %#x = %#x, want KILL_PROCESS", h.goarch, nr, arch, got)
				}
			}
		}
	})
}

func TestX32Numbers(t *testing.T) {
	forArches(t, func(t *testing.T, h *harness, _ Options) {
		want := uint32(wantEPERM)
		if h.goarch == "arm64" {
			want = wantAllow // no second ABI: the kernel answers ENOSYS
		}
		for _, name := range []string{"read", "getpid", "execve"} {
			d := seccompData{nr: 0x40000000 | h.nr(name), arch: auditArches[h.goarch]}
			if got := h.eval(d); got != want {
				t.Errorf("%s: x32 %s = %#x, want %#x", h.goarch, name, got, want)
			}
		}
	})
}

func TestRules(t *testing.T) {
	f, err := BuildFor("amd64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	rules := f.Rules()
	if rules[0] != (Rule{Syscall: "*", When: "arch != AUDIT_ARCH_X86_64", Action: ActionKillProcess}) {
		t.Errorf("first rule = %+v", rules[0])
	}
	byName := make(map[string]Rule)
	for _, r := range rules {
		byName[r.Syscall] = r
	}
	for name, action := range map[string]string{"clone3": ActionENOSYS, "clone": ActionEPERM, "ioctl": ActionEPERM, "ptrace": ActionEPERM} {
		if byName[name].Action != action {
			t.Errorf("rule for %s = %+v, want action %s", name, byName[name], action)
		}
	}
	if byName["socket"].When != "family not in {AF_UNIX}" {
		t.Errorf("socket rule = %+v", byName["socket"])
	}
}

func TestBuildUnsupportedArch(t *testing.T) {
	for _, goarch := range []string{"riscv64", "386", ""} {
		if _, err := BuildFor(goarch, Options{}); !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("BuildFor(%q) error = %v, want ErrUnsupportedArch", goarch, err)
		}
	}
}

func TestBytesLayout(t *testing.T) {
	f, err := BuildFor("amd64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := f.Bytes()
	if len(b) != 8*len(f.Instructions()) {
		t.Fatalf("len(Bytes()) = %d for %d instructions", len(b), len(f.Instructions()))
	}
	// ld [4]; jeq #AUDIT_ARCH_X86_64 jt +0 jf to the last instruction.
	want := []byte{0x20, 0, 0, 0, 4, 0, 0, 0, 0x15, 0, 0, byte(len(b)/8 - 3), 0x3e, 0, 0, 0xc0}
	if !slices.Equal(b[:16], want) {
		t.Errorf("first instructions = % x, want % x", b[:16], want)
	}
}

func TestInstructionsIsACopy(t *testing.T) {
	f, err := BuildFor("arm64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Instructions()[0].K = 99
	f.Denied()[0] = "nothing"
	if f.Instructions()[0].K != offArch || f.Denied()[0] == "nothing" {
		t.Error("mutating a returned slice changed the filter")
	}
}
