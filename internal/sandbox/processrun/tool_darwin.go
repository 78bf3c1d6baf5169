package processrun

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/sandboxexec"
)

// platformBackend is sandbox-exec.
func platformBackend() (nativeBackend, error) { return seatbeltBackend, nil }

// available reports whether sandbox-exec is installed.
func available() error { return sandboxexec.Available() }

// nativeLookPath finds command in the plan's PATH and returns its
// canonical path, which the Seatbelt profile names.
func nativeLookPath(command string, env []string) (string, error) {
	p, err := lookPathIn(command, envValue(env, "PATH", procinput.DefaultPath), ':', []string{""},
		func(m os.FileMode) bool { return m.Perm()&0o111 != 0 })
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// runBackend runs the plan under sandbox-exec until it ends, its timeout
// passes, ctx ends or its output passes the budget; the whole process
// group is killed then and when the program exits.
func (t *Tool) runBackend(ctx context.Context, plan *procinput.Plan, program string, out *budget) (nativeEnd, map[string]any, error) {
	sp := seatbeltPlan(plan, program)
	enf := sp.Enforcement()
	runCtx, cancel := context.WithTimeoutCause(ctx, plan.Timeout, errTimedOut)
	defer cancel()
	cmd, err := sp.Command(runCtx)
	if err != nil {
		return nativeEnd{}, enf, err
	}
	cmd.Stdout, cmd.Stderr = out.writer(0), out.writer(1)
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		if runCtx.Err() != nil {
			return nativeEnd{}, enf, context.Cause(runCtx)
		}
		return nativeEnd{}, enf, err
	}
	begin := time.Now()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-out.over:
		cancel()
		<-done
	case <-runCtx.Done():
		<-done
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	end := nativeEnd{code: cmd.ProcessState.ExitCode(), wall: time.Since(begin), resources: map[string]int64{
		"cpu_user_ms": cmd.ProcessState.UserTime().Milliseconds(), "cpu_sys_ms": cmd.ProcessState.SystemTime().Milliseconds()}}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		end.code = 128 + int(ws.Signal())
	}
	switch {
	case out.overflowed():
	case ctx.Err() != nil:
		end.cancelled, end.cause = true, context.Cause(ctx)
	case runCtx.Err() != nil:
		end.timedOut = true
	}
	return end, enf, nil
}
