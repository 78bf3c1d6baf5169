package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
)

// ErrUnavailable is wrapped when bubblewrap is not installed.
var ErrUnavailable = errors.New("bubblewrap (bwrap) not found; install it with apt-get install -y bubblewrap")

// Available finds bwrap in PATH and returns its path and version.
func Available() (path string, version string, err error) {
	path, err = exec.LookPath("bwrap")
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%w: %s --version: %v", ErrUnavailable, path, err)
	}
	return path, strings.TrimSpace(strings.TrimPrefix(string(out), "bubblewrap")), nil
}

// Command returns bwrap running the plan: ExtraFiles carry the descriptor
// files, stdin is /dev/null (exec.Cmd's default when Stdin is nil), bwrap
// leads its own process group, gets SIGKILL if the calling thread dies,
// and is killed when ctx is done. The caller closes cmd.ExtraFiles after
// Start (Start does both).
func (p Plan) Command(ctx context.Context) (*exec.Cmd, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	args, files, err := p.Args()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{} // bwrap itself needs nothing; the sandbox's env is in argv
	cmd.Dir = "/"
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Kill the whole group: bwrap, and through --die-with-parent and the pid
	// namespace, everything inside.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

// Start starts cmd from Command and closes the parent's copies of its
// descriptor files, which bwrap has inherited by then.
func Start(cmd *exec.Cmd) error {
	err := cmd.Start()
	closeAll(cmd.ExtraFiles)
	if err != nil {
		return fmt.Errorf("start bwrap: %w", err)
	}
	return nil
}

// Run runs the plan to completion with the given output writers (nil
// discards), and returns cmd.Wait's error.
func (p Plan) Run(ctx context.Context, stdout, stderr io.Writer) error {
	cmd, err := p.Command(ctx)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}
