//go:build darwin

package sandboxexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// waitDelay bounds how long Run waits, after the program exits, for the
// output pipes that something it left behind still holds.
const waitDelay = time.Second

// Available reports whether sandbox-exec is installed.
func Available() error {
	fi, err := os.Stat(Path)
	if err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("sandbox-exec: %s is not an executable file", Path)
	}
	return nil
}

// Command returns sandbox-exec running the plan, after CheckPaths: its
// environment is exactly Environ's, it starts in Dir, stdin is /dev/null
// (exec.Cmd's default when Stdin is nil), it leads its own process group,
// and the whole group gets SIGKILL when ctx is done. sandbox-exec applies
// the profile and then executes the program in the same process, so the
// process is the program.
func (p Plan) Command(ctx context.Context) (*exec.Cmd, error) {
	argv, err := p.Argv()
	if err != nil {
		return nil, err
	}
	if err := p.CheckPaths(); err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, Path)
	cmd.Args = argv
	cmd.Env = p.env()
	cmd.Dir = p.dir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

// Run runs the plan to completion with the given output writers (nil
// discards) and returns cmd.Wait's error. The run ends with the program:
// what it left running in its process group is killed, and output
// written later than waitDelay after its exit is lost.
func (p Plan) Run(ctx context.Context, stdout, stderr io.Writer) error {
	cmd, err := p.Command(ctx)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sandbox-exec: %w", err)
	}
	err = cmd.Wait()
	// The group outlives its leader while members remain, so its id is
	// not reused yet; ESRCH means nothing was left.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return err
}
