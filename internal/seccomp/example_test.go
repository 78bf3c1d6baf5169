package seccomp_test

import (
	"fmt"

	"github.com/execledger/execledger/internal/seccomp"
)

// The tier C executor passes the program to bubblewrap on a spare fd
// (--seccomp 3) and records the policy in the attestation.
func ExampleBuildFor() {
	f, err := seccomp.BuildFor("amd64", seccomp.Options{AllowInet: false})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(f.Bytes()), "bytes")
	fmt.Println(f.Denied()[:4])
	for _, r := range f.Rules()[:2] {
		fmt.Printf("%s when %s: %s\n", r.Syscall, r.When, r.Action)
	}
	for _, r := range f.Rules()[len(f.Rules())-6:] {
		fmt.Printf("%s when %q: %s\n", r.Syscall, r.When, r.Action)
	}
	// Output:
	// 576 bytes
	// [acct add_key bpf delete_module]
	// * when arch != AUDIT_ARCH_X86_64: KILL_PROCESS
	// * when nr & 0x40000000 (x32 ABI): ERRNO(EPERM)
	// clone when "flags & CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}": ERRNO(EPERM)
	// unshare when "flags & CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}": ERRNO(EPERM)
	// ioctl when "cmd in {TIOCSTI, TIOCLINUX}": ERRNO(EPERM)
	// personality when "persona not in {0, 0xffffffff}": ERRNO(EPERM)
	// socket when "family not in {AF_UNIX}": ERRNO(EPERM)
	// socketpair when "family not in {AF_UNIX}": ERRNO(EPERM)
}
