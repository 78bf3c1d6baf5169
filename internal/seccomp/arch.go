package seccomp

import (
	"errors"
	"fmt"
)

// ErrUnsupportedArch reports a GOARCH the package has no syscall table for.
var ErrUnsupportedArch = errors.New("seccomp: unsupported architecture")

// x32Bit marks an x32 syscall number on amd64 (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// archTable is what the program needs to know about one architecture: its
// audit arch value and the numbers of the syscalls the policy names.
type archTable struct {
	goarch    string
	auditArch uint32
	auditName string
	// x32 is set when the audit arch also carries a second syscall ABI
	// told apart by x32Bit.
	x32 bool
	// syscalls maps the name of every syscall the policy refers to that
	// exists on the architecture to its number.
	syscalls map[string]uint32
}

// lookupArch returns the table of goarch.
func lookupArch(goarch string) (archTable, error) {
	switch goarch {
	case "amd64":
		return archTable{goarch: goarch, auditArch: 0xc000003e, auditName: "AUDIT_ARCH_X86_64", x32: true, syscalls: x86_64Syscalls()}, nil
	case "arm64":
		return archTable{goarch: goarch, auditArch: 0xc00000b7, auditName: "AUDIT_ARCH_AARCH64", syscalls: aarch64Syscalls()}, nil
	}
	return archTable{}, fmt.Errorf("%w: %q (supported: amd64, arm64)", ErrUnsupportedArch, goarch)
}

// name returns the syscall whose number is nr, or "".
func (t archTable) name(nr uint32) string {
	for name, n := range t.syscalls {
		if n == nr {
			return name
		}
	}
	return ""
}
