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
	"path/filepath"
	"runtime"
	"strings"
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

// Main runs the init in Go: see the package documentation. It returns the
// exit status for os.Exit. Errors go to stderr, which the target shares.
// Only a binary built without cgo gets here; with cgo the C init has run
// and exited before the Go runtime started.
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
	lost, err := watchLifeline(spec.Lifeline)
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

	if spec.Lifeline && launcherGone() {
		return Usage{ExitCode: ExitInitFailed}, errLauncherGone
	}
	cmd := targetCommand(spec)
	if err := cmd.Start(); err != nil {
		code := ExitCannotExecute
		if errors.Is(err, os.ErrNotExist) {
			code = ExitNotFound
		}
		return Usage{ExitCode: code}, fmt.Errorf("start target: %w", err)
	}
	ended := waitTarget(cmd.Process.Pid, signals, lost)
	// The target led its process group: kill what is left of it and every
	// other process below the init.
	usage := Usage{DescendantsKilled: killDescendants(cmd.Process.Pid, time.Now().Add(killTimeout))}
	_ = cmd.Process.Release()
	usage.ExitCode, usage.Signal = exitStatus(ended.status)
	usage.TargetCPUMS = ended.cpuMS
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
	data, err := io.ReadAll(io.LimitReader(f, maxWireBytes+1))
	if err != nil {
		return Spec{}, fmt.Errorf("read spec: %w", err)
	}
	if len(data) > maxWireBytes {
		return Spec{}, fmt.Errorf("read spec: %w: longer than %d bytes", errWire, maxWireBytes)
	}
	spec, err := decodeSpec(data)
	if err != nil {
		return Spec{}, fmt.Errorf("read spec: %w", err)
	}
	return spec, nil
}

// setup prepares the init's own process state, which the target inherits.
func setup(spec Spec) error {
	if err := closeOnExecAbove(); err != nil {
		return err
	}
	// Not dumpable: a process of the same uid (the target, in tier C) can
	// then neither open the init's descriptors through /proc/<pid>/fd —
	// the usage report's pipe among them, where it could write a forged
	// report first — nor trace it. execve gives the target its own flag.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	if err := spec.Limits.apply(); err != nil {
		return err
	}
	if spec.PrivateTmp {
		// Before seccomp, which refuses mount and unshare.
		if err := privateTmp(spec.PrivateTmpBytes, spec.Keep); err != nil {
			return err
		}
	}
	if !spec.Seccomp {
		return nil
	}
	// Installed in the init, with TSYNC on all its threads, so the target
	// inherits it across fork and exec; the filter allows all the init
	// still does (wait4, kill, reading /proc).
	f, err := seccomp.Build(seccomp.Options{DenyUnixSocket: spec.DenyUnixSockets})
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
// termination signals to the target's process group meanwhile. When lost
// is closed (the launcher is gone) it kills that group.
func waitTarget(target int, signals <-chan os.Signal, lost <-chan struct{}) reapResult {
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		if res := reapChildren(target); res.target {
			return res
		}
		select {
		case s := <-signals:
			if s != unix.SIGCHLD {
				_ = unix.Kill(-target, s.(syscall.Signal))
			}
		case <-lost:
			fmt.Fprintf(os.Stderr, "sandbox init: %v: killing the target\n", errLauncherGone)
			_ = unix.Kill(-target, unix.SIGKILL)
			_ = unix.Kill(target, unix.SIGKILL) // should it have left its group
			lost = nil
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

// privateTmp gives the calling thread — Main keeps the init on one, and the
// target is forked from it — a mount namespace of its own, stops mount
// events flowing back to the host, and mounts an empty tmpfs on each of
// PrivateDirs that exists.
func privateTmp(size uint64, keep []string) error {
	if size == 0 {
		size = 64 << 20
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("private tmp: unshare(CLONE_NEWNS): %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("private tmp: make / a slave mount: %w", err)
	}
	// Directories to bind back are opened (in the new namespace) before
	// they are covered.
	var kept []*os.File
	defer func() {
		for _, f := range kept {
			f.Close()
		}
	}()
	for _, k := range keep {
		if !filepath.IsAbs(k) {
			return fmt.Errorf("private tmp: keep %q is not absolute", k)
		}
		fd, err := unix.Open(k, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("private tmp: open %s: %w", k, err)
		}
		kept = append(kept, os.NewFile(uintptr(fd), k))
	}
	for _, dir := range PrivateDirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue // absent, or a symlink: nothing to hide there
		}
		opts := fmt.Sprintf("mode=1777,size=%d,nr_inodes=65536", size)
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("private tmp: mount tmpfs on %s: %w", dir, err)
		}
		for _, f := range kept {
			rel, err := filepath.Rel(dir, f.Name())
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				continue
			}
			// Recreate the path inside the tmpfs (root-owned, 0711: only
			// traversable) and bind the original directory onto it.
			target := filepath.Join(dir, rel)
			if err := mkdirAll0711(dir, rel); err != nil {
				return fmt.Errorf("private tmp: keep %s: %w", f.Name(), err)
			}
			src := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
			if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("private tmp: bind %s back: %w", f.Name(), err)
			}
		}
	}
	return nil
}

// mkdirAll0711 creates rel's directories below base, mode 0711.
func mkdirAll0711(base, rel string) error {
	p := base
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		if err := os.Mkdir(p, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Chmod(p, 0o711); err != nil {
			return err
		}
	}
	return nil
}
