package seccomp

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// elfEnv names the variable that tells the child where int80ELF was
// written.
const elfEnv = "EXECLEDGER_SECCOMP_TEST_ELF"

// int80ELF returns a minimal static x86_64 executable that makes an i386
// getpid through int 0x80 (audit arch AUDIT_ARCH_I386) and then exits 0
// through the native syscall.
func int80ELF() []byte {
	const base, ehdr, phdr = 0x400000, 64, 56
	code := []byte{
		0xb8, 20, 0, 0, 0, // mov eax, 20 (i386 getpid)
		0xcd, 0x80, // int 0x80
		0xb8, 60, 0, 0, 0, // mov eax, 60 (exit)
		0x31, 0xff, // xor edi, edi
		0x0f, 0x05, // syscall
	}
	size := uint64(ehdr + phdr + len(code))
	le := binary.LittleEndian
	b := []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	b = le.AppendUint16(b, 2)    // ET_EXEC
	b = le.AppendUint16(b, 0x3e) // EM_X86_64
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, base+ehdr+phdr) // entry
	b = le.AppendUint64(b, ehdr)           // phoff
	b = le.AppendUint64(b, 0)              // shoff
	b = le.AppendUint32(b, 0)
	b = le.AppendUint16(b, ehdr)
	b = le.AppendUint16(b, phdr)
	b = le.AppendUint16(b, 1) // phnum
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, 1) // PT_LOAD
	b = le.AppendUint32(b, 5) // PF_R | PF_X
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, 0x1000)
	return append(b, code...)
}

// archProbes are the amd64-only probes: an x32 syscall number and an i386
// syscall, which the filter must kill the process for.
func archProbes() []probe {
	return []probe{
		{"x32_getpid", false, func() string { return sys(0x40000000 | unix.SYS_GETPID) }},
		{"int80", true, func() string {
			err := exec.Command(os.Getenv(elfEnv)).Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return "signal " + unix.SignalName(ws.Signal())
				}
			}
			return result(err)
		}},
	}
}
