package seccomp

// Labels of the program's shared tails.
const (
	lblAllow  = "allow"
	lblEPERM  = "eperm"
	lblENOSYS = "enosys"
	lblKill   = "kill"
)

// compile builds the program for t and opts; rules describes it.
func compile(t archTable, opts Options) ([]Instruction, error) {
	a := newAssembler()
	a.load(offArch)
	a.jeq(t.auditArch, "", lblKill)
	a.load(offNr)
	if t.x32 {
		a.jset(x32Bit, lblEPERM, "")
	}
	for _, name := range deniedSyscalls() {
		if nr, ok := t.syscalls[name]; ok {
			a.jeq(nr, lblEPERM, "")
		}
	}
	a.jeq(t.syscalls["clone3"], lblENOSYS, "")
	a.jeq(t.syscalls["clone"], "clone", "")
	a.jeq(t.syscalls["unshare"], "unshare", "")
	a.jeq(t.syscalls["ioctl"], "ioctl", "")
	a.jeq(t.syscalls["personality"], "personality", "")
	a.jeq(t.syscalls["socket"], "socket", "")
	if opts.DenyUnixSocket {
		a.jeq(t.syscalls["socketpair"], "socketpair", "")
	} else {
		a.jeq(t.syscalls["socketpair"], "socket", "")
	}
	a.ret(retAllow)

	a.label("clone")
	a.load(argLow(0))
	a.jset(cloneNamespaceFlags, lblEPERM, lblAllow)

	a.label("unshare")
	a.load(argLow(0))
	a.jset(cloneNamespaceFlags|cloneNewTime, lblEPERM, lblAllow)

	a.label("ioctl")
	a.load(argLow(1))
	a.jeq(ioctlTIOCSTI, lblEPERM, "")
	a.jeq(ioctlTIOCLINUX, lblEPERM, lblAllow)

	a.label("personality")
	a.load(argLow(0))
	a.jeq(personaLinux, lblAllow, "")
	a.jeq(personaQuery, lblAllow, lblEPERM)

	a.label("socket")
	a.load(argLow(0))
	if opts.AllowInet {
		a.jeq(afInet, lblAllow, "")
		a.jeq(afInet6, lblAllow, "")
	}
	if !opts.DenyUnixSocket {
		a.jeq(afUnix, lblAllow, lblEPERM)
	} else {
		a.ret(retErrno | errnoEPERM)
		// socketpair keeps AF_UNIX: a connected pair reaches nothing else.
		a.label("socketpair")
		a.load(argLow(0))
		if opts.AllowInet {
			a.jeq(afInet, lblAllow, "")
			a.jeq(afInet6, lblAllow, "")
		}
		a.jeq(afUnix, lblAllow, lblEPERM)
	}

	a.label(lblAllow)
	a.ret(retAllow)
	a.label(lblEPERM)
	a.ret(retErrno | errnoEPERM)
	a.label(lblENOSYS)
	a.ret(retErrno | errnoENOSYS)
	a.label(lblKill)
	a.ret(retKillProcess)
	return a.assemble()
}
