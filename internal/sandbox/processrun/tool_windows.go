package processrun

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/jobobject"
)

// platformBackend is the job object.
func platformBackend() (nativeBackend, error) { return jobObjectBackend, nil }

// available reports whether job objects can be created.
func available() error { return jobobject.Available() }

// nativeLookPath finds command in the plan's PATH (";"-separated), as an
// .exe or .com file, the only kinds jobobject runs.
func nativeLookPath(command string, env []string) (string, error) {
	exts := []string{".exe", ".com"}
	if ext := strings.ToLower(command[max(0, len(command)-4):]); ext == ".exe" || ext == ".com" {
		exts = []string{""}
	}
	return lookPathIn(command, envValue(env, "PATH", procinput.DefaultPath), ';', exts,
		func(os.FileMode) bool { return true })
}

// errOverflow is the cause of a run's context when its output passed the
// budget.
var errOverflow = errors.New("output over budget")

// runBackend runs the plan in a job object until it ends, its timeout
// passes, ctx ends or its output passes the budget; the whole job is
// terminated then and when the program exits.
func (t *Tool) runBackend(ctx context.Context, plan *procinput.Plan, program string, out *budget) (nativeEnd, map[string]any, error) {
	jp := jobPlan(plan, program, t.cfg.Limits)
	enf := jp.Enforcement()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-out.over:
			cancel(errOverflow)
		case <-runCtx.Done():
		}
	}()
	exit, err := jp.Run(runCtx, out.writer(0), out.writer(1))
	end := nativeEnd{code: int(exit.Code), timedOut: exit.TimedOut, wall: exit.Wall, resources: map[string]int64{
		"cpu_user_ms": exit.UserTime.Milliseconds(), "cpu_sys_ms": exit.KernelTime.Milliseconds(),
		"processes": int64(exit.Processes), "peak_job_memory_bytes": int64(exit.PeakJobMemory)}}
	switch {
	case err == nil:
	case errors.Is(context.Cause(runCtx), errOverflow):
	case ctx.Err() != nil && exit.Wall > 0:
		end.cancelled, end.cause = true, context.Cause(ctx)
	default:
		return nativeEnd{}, enf, err
	}
	return end, enf, nil
}
