package seccomp

import (
	"fmt"
	"strings"
)

// Disassemble returns the program in a bpf_dbg-like listing, one
// instruction a line with absolute jump targets, annotated with the
// seccomp_data field loaded, the syscall a number stands for, the constant
// an argument is compared with and the action a return value means.
func (f *Filter) Disassemble() string {
	var b strings.Builder
	fmt.Fprintf(&b, "; seccomp filter for %s (%s), AllowInet=%t, DenyUnixSocket=%t, %d instructions\n",
		f.arch.goarch, f.arch.auditName, f.opts.AllowInet, f.opts.DenyUnixSocket, len(f.insns))
	loaded, syscall := "", ""
	blocks := make(map[int]string) // first instruction of a syscall's argument checks
	for pc, in := range f.insns {
		if name, ok := blocks[pc]; ok {
			syscall = name
		}
		text, note := disassembleOne(pc, in)
		switch {
		case in.Code == opLdWAbs:
			loaded = note
		case in.Code == opJeqK && loaded == "nr":
			note = f.arch.name(in.K)
			if _, ok := blocks[pc+1+int(in.Jt)]; !ok {
				blocks[pc+1+int(in.Jt)] = note
			}
		case in.Code == opJeqK || in.Code == opJsetK:
			note = argConstName(syscall, in.K)
		}
		if note != "" {
			text = fmt.Sprintf("%-36s ; %s", text, note)
		}
		fmt.Fprintf(&b, "%03d: %s\n", pc, text)
	}
	return b.String()
}

// disassembleOne returns the text of in at pc and a note on it.
func disassembleOne(pc int, in Instruction) (text, note string) {
	targets := fmt.Sprintf("jt %03d jf %03d", pc+1+int(in.Jt), pc+1+int(in.Jf))
	switch in.Code {
	case opLdWAbs:
		return fmt.Sprintf("ld   [%d]", in.K), fieldName(in.K)
	case opJeqK:
		return fmt.Sprintf("jeq  #%#x %s", in.K, targets), ""
	case opJsetK:
		return fmt.Sprintf("jset #%#x %s", in.K, targets), ""
	case opRetK:
		return fmt.Sprintf("ret  #%#x", in.K), actionName(in.K)
	}
	return fmt.Sprintf("unknown code %#04x jt %d jf %d k %#x", in.Code, in.Jt, in.Jf, in.K), ""
}

// fieldName names the seccomp_data word at off.
func fieldName(off uint32) string {
	switch {
	case off == offNr:
		return "nr"
	case off == offArch:
		return "arch"
	case off >= offArgs && off < offArgs+6*8:
		half := "lo"
		if (off-offArgs)%8 != 0 {
			half = "hi"
		}
		return fmt.Sprintf("args[%d].%s", (off-offArgs)/8, half)
	}
	return "instruction_pointer"
}

// actionName names a seccomp return value.
func actionName(k uint32) string {
	switch {
	case k == retAllow:
		return "ALLOW"
	case k == retKillProcess:
		return ActionKillProcess
	case k == retErrno|errnoEPERM:
		return ActionEPERM
	case k == retErrno|errnoENOSYS:
		return ActionENOSYS
	case k&^retDataMask == retErrno:
		return fmt.Sprintf("ERRNO(%d)", k&retDataMask)
	}
	return ""
}

// argConstName names the constant k that an argument of syscall is
// compared with.
func argConstName(syscall string, k uint32) string {
	switch {
	case syscall == "clone" && k == cloneNamespaceFlags:
		return "CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}"
	case syscall == "unshare" && k == cloneNamespaceFlags|cloneNewTime:
		return "CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}"
	case syscall == "ioctl" && k == ioctlTIOCSTI:
		return "TIOCSTI"
	case syscall == "ioctl" && k == ioctlTIOCLINUX:
		return "TIOCLINUX"
	case syscall == "personality" && k == personaLinux:
		return "PER_LINUX"
	case syscall == "personality" && k == personaQuery:
		return "query"
	case syscall == "socket" && k == afUnix:
		return "AF_UNIX"
	case syscall == "socket" && k == afInet:
		return "AF_INET"
	case syscall == "socket" && k == afInet6:
		return "AF_INET6"
	}
	return ""
}
