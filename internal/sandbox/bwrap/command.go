//go:build linux

package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/execledger/execledger/internal/sandbox/procinit"
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

// Cmd is bwrap running a plan, from Plan.Command. Set Stdout and Stderr,
// then call Start (not exec.Cmd's Start, which the embedding hides: with
// Limits, bwrap waits for Start's exchange) and Wait, or Run.
type Cmd struct {
	*exec.Cmd
	limits procinit.Limits
	a      *argv
}

// Command returns bwrap running the plan: ExtraFiles carry the descriptor
// files, stdin is /dev/null (exec.Cmd's default when Stdin is nil), bwrap
// leads its own process group, runs as HostUID/HostGID when they are set,
// gets SIGKILL if the calling thread dies, and is killed when ctx is done.
// Start (or Close, for a Cmd never started) releases what Command opened.
func (p Plan) Command(ctx context.Context) (*Cmd, error) {
	path, err := p.bwrapPath()
	if err != nil {
		return nil, err
	}
	a, err := p.argv(true)
	if err != nil {
		return nil, err
	}
	if err := inheritNothing(); err != nil {
		a.close()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, a.args...)
	cmd.Env = []string{} // bwrap itself needs nothing; the sandbox's env is in argv
	cmd.Dir = "/"
	cmd.ExtraFiles = a.files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.HostUID != 0 && (int(p.HostUID) != os.Geteuid() || int(p.HostGID) != os.Getegid()) {
		// Go sets Pdeathsig after the credentials, which would clear it.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: p.HostUID, Gid: p.HostGID, Groups: []uint32{}}
	}
	// Kill the whole group: bwrap, and through --die-with-parent and the pid
	// namespace, everything inside.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return &Cmd{Cmd: cmd, limits: p.Limits, a: a}, nil
}

// bwrapPath is the Host's bwrap, or the one in PATH.
func (p Plan) bwrapPath() (string, error) {
	if p.Host != nil {
		return p.Host.bwrap, nil
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return path, nil
}

// Start starts bwrap and closes the parent's copies of the descriptor files
// it made, which bwrap has inherited by then.
//
// With Limits it then reads the sandbox's pid 1 from --info-fd, sets the
// limits on it with prlimit(2) (from a thread switched to HostUID's real
// ids when the caller may not otherwise), and writes the byte bwrap waits
// for on --block-fd. bubblewrap's
// main() reads that byte after it has set up the sandbox and dropped its
// privileges, and before pid 1 loads the seccomp filter, changes directory,
// calls setsid() and forks the process that executes the program, so the
// program and everything it starts inherit the limits (bubblewrap.c, main();
// setLimits cites the blocks). If setting them fails, Start kills bwrap
// before it can go on, waits for it and returns the error.
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	closeAll(c.a.made)
	c.a.made = nil
	if err != nil {
		c.Close()
		return fmt.Errorf("start bwrap: %w", err)
	}
	if c.a.info == nil {
		return nil
	}
	var as *syscall.Credential
	if c.SysProcAttr != nil {
		as = c.SysProcAttr.Credential
	}
	kill := func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	if err := setLimits(c.a.info, c.a.block, c.limits, as, kill); err != nil {
		// Killed before the block end closes: the program never runs
		// without its limits.
		kill()
		c.Close()
		_ = c.Wait()
		return fmt.Errorf("bwrap: %w", err)
	}
	c.Close()
	return nil
}

// Close releases the descriptors Command opened; Start calls it. A bwrap
// waiting on --block-fd goes on when its end closes, limits set or not:
// never start Cmd.Cmd directly.
func (c *Cmd) Close() {
	c.a.close()
	c.a.made, c.a.info, c.a.block = nil, nil, nil
}

// Run starts c and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Run runs the plan to completion with the given output writers (nil
// discards), and returns cmd.Wait's error.
func (p Plan) Run(ctx context.Context, stdout, stderr io.Writer) error {
	cmd, err := p.Command(ctx)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}
