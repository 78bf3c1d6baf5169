package procinit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/seccomp"
)

// Timings of the init.
const (
	// reapInterval is how often the init polls for ended children besides
	// SIGCHLD, which the kernel may coalesce.
	reapInterval = 200 * time.Millisecond
	// killTimeout bounds the final sweep: a process stuck in an
	// uninterruptible sleep cannot be reaped.
	killTimeout = 5 * time.Second
)

// Main runs the init: see the package documentation. It returns the exit
// status for os.Exit. Errors go to stderr, which the target shares.
func Main() int {
	// The target's Pdeathsig fires when the thread that started it exits:
	// keep this goroutine on its thread for the life of the init.
	runtime.LockOSThread()
	usageOut := openFD(usageFD, "sandbox-init-usage")
	usage, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox init: %v\n", err)
	}
	if usageOut != nil {
		if err := json.NewEncoder(usageOut).Encode(usage); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox init: report usage: %v\n", err)
		}
		usageOut.Close()
	}
	return usage.ExitCode
}

// run sets up the init, runs the target and clears up after it.
func run() (Usage, error) {
	spec, err := readSpec()
	if err != nil {
		return Usage{ExitCode: ExitInitFailed}, err
	}
	if err := setup(spec); err != nil {
		return Usage{ExitCode: ExitInitFailed}, err
	}
	stopBridge, err := startBridge(spec.Bridge)
	if err != nil {
		return Usage{ExitCode: ExitInitFailed}, err
	}
	// Deferred, so it runs after the sweep below: no process that could
	// use the bridge is left when it closes.
	defer stopBridge()
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT)
	defer signal.Stop(signals)

	cmd := targetCommand(spec)
	if err := cmd.Start(); err != nil {
		code := ExitCannotExecute
		if errors.Is(err, os.ErrNotExist) {
			code = ExitNotFound
		}
		return Usage{ExitCode: code}, fmt.Errorf("start target: %w", err)
	}
	status := waitTarget(cmd.Process.Pid, signals)
	// The target led its process group: kill what is left of it and every
	// other process below the init.
	usage := Usage{DescendantsKilled: killDescendants(cmd.Process.Pid, time.Now().Add(killTimeout))}
	_ = cmd.Process.Release()
	usage.ExitCode, usage.Signal = exitStatus(status)
	addRusage(&usage)
	return usage, nil
}

// readSpec reads and validates the Spec on descriptor 3, then closes it.
func readSpec() (Spec, error) {
	f := openFD(specFD, "sandbox-init-spec")
	if f == nil {
		return Spec{}, fmt.Errorf("read spec: descriptor %d is not open", specFD)
	}
	defer f.Close()
	_, _ = f.Seek(0, io.SeekStart) // a memfd from Command; a pipe cannot seek
	var spec Spec
	if err := json.NewDecoder(f).Decode(&spec); err != nil {
		return Spec{}, fmt.Errorf("read spec: %w", err)
	}
	return spec, spec.validate()
}

// setup prepares the init's own process state, which the target inherits.
func setup(spec Spec) error {
	if err := closeOnExecAbove(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	if err := spec.Limits.apply(); err != nil {
		return err
	}
	if !spec.Seccomp {
		return nil
	}
	// Installed in the init, with TSYNC on all its threads, so the target
	// inherits it across fork and exec; the filter allows all the init
	// still does (wait4, kill, reading /proc).
	f, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		return err
	}
	return f.Install()
}

// startBridge opens b's listener and relays it to b's socket until the
// returned function is called; nil starts nothing.
func startBridge(b *Bridge) (stop func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", b.Listen)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = egress.Bridge(ctx, ln, b.Socket)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(killTimeout):
		}
	}, nil
}

// targetCommand is the target's command: stdio of the init, a process
// group of its own (so signals can be forwarded to it without reaching the
// init), SIGKILL when the init dies, and the Spec's credentials.
func targetCommand(spec Spec) *exec.Cmd {
	env := spec.Env
	if env == nil {
		env = []string{}
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if spec.UID != 0 {
		gid := spec.GID
		if gid == 0 {
			gid = uint32(os.Getgid())
		}
		attr.Credential = &syscall.Credential{Uid: spec.UID, Gid: gid, Groups: []uint32{}}
	}
	return &exec.Cmd{
		Path:        spec.Path,
		Args:        append([]string{spec.Path}, spec.Args...),
		Env:         env,
		Dir:         spec.Dir,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: attr,
	}
}

// waitTarget reaps children until the target has ended, forwarding
// termination signals to the target's process group meanwhile.
func waitTarget(target int, signals <-chan os.Signal) unix.WaitStatus {
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		if res := reapChildren(target); res.target {
			return res.status
		}
		select {
		case s := <-signals:
			if s != unix.SIGCHLD {
				_ = unix.Kill(-target, s.(syscall.Signal))
			}
		case <-tick.C:
		}
	}
}

// exitStatus maps a wait status to the init's exit status and the signal
// that ended the target (0 if none).
func exitStatus(ws unix.WaitStatus) (code, sig int) {
	if ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ws.ExitStatus(), 0
}

// addRusage fills u's resource figures from RUSAGE_CHILDREN.
func addRusage(u *Usage) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) != nil {
		return
	}
	u.CPUUserMS = ru.Utime.Sec*1000 + ru.Utime.Usec/1000
	u.CPUSysMS = ru.Stime.Sec*1000 + ru.Stime.Usec/1000
	u.MaxRSSKB = ru.Maxrss
}
