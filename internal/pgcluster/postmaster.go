//go:build unix

package pgcluster

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// postmaster is a running postgres server process, a child of ours.
type postmaster struct {
	proc *os.Process
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // cmd.Wait's result; read only after done is closed
}

// startPostmaster starts cmd. On Linux the child gets SIGINT (fast
// shutdown) when we die, so a killed `execledger dev` does not leave a
// server holding the data directory. That parent-death signal fires when
// the OS thread that forked the child exits, not the process, so the fork
// happens on a goroutine locked to its thread until the child is gone: the
// Go scheduler can then never retire that thread under a running server.
func startPostmaster(cmd *exec.Cmd) (*postmaster, error) {
	setParentDeathSignal(cmd.SysProcAttr, syscall.SIGINT)
	pm := &postmaster{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		pm.proc = cmd.Process
		started <- nil
		pm.err = cmd.Wait()
		close(pm.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return pm, nil
}

func (p *postmaster) pid() int { return p.proc.Pid }

func (p *postmaster) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the postmaster unless it has exited. os.Process uses
// a pidfd on Linux, so a recycled pid is never signaled.
func (p *postmaster) signal(sig os.Signal) {
	if !p.exited() {
		_ = p.proc.Signal(sig) // fails only once the process is gone, which done reports
	}
}

// stop asks for a fast shutdown (SIGINT: disconnect clients, checkpoint,
// exit) and waits for it. If ctx ends first it forces an immediate shutdown
// (SIGQUIT; crash recovery on next start), then SIGKILLs the postmaster
// (its children notice its death and exit), and returns ctx's error.
func (p *postmaster) stop(ctx context.Context) error {
	p.signal(syscall.SIGINT)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	}
	p.signal(syscall.SIGQUIT)
	if !p.waitFor(5 * time.Second) {
		p.signal(syscall.SIGKILL)
		p.waitFor(5 * time.Second)
	}
	return ctx.Err()
}

func (p *postmaster) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}
