//go:build windows

package jobobject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// waitDelay bounds how long Run waits for the output pipes once the job
// is terminated; a pipe handle that a process passed outside the job
// would otherwise keep them open.
const waitDelay = time.Second

// child is a process created suspended, with the parent's ends of its
// output pipes.
type child struct {
	pi             windows.ProcessInformation
	stdout, stderr *os.File
}

// inheritable marks h inheritable or not.
func inheritable(h windows.Handle, on bool) error {
	var flags uint32
	if on {
		flags = windows.HANDLE_FLAG_INHERIT
	}
	return windows.SetHandleInformation(h, windows.HANDLE_FLAG_INHERIT, flags)
}

// startSuspended creates the process suspended. It inherits exactly three
// handles, named in a PROC_THREAD_ATTRIBUTE_HANDLE_LIST: NUL as stdin and
// the write ends of two pipes. The parent's copies of those are closed on
// return.
func (p Plan) startSuspended(cmdline string, env []uint16, flags uint32) (c *child, err error) {
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer stdin.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		return nil, err
	}
	defer errW.Close()
	defer func() {
		if err != nil {
			outR.Close()
			errR.Close()
		}
	}()
	handles := []windows.Handle{windows.Handle(stdin.Fd()), windows.Handle(outW.Fd()), windows.Handle(errW.Fd())}
	for _, h := range handles {
		if err := inheritable(h, true); err != nil {
			return nil, fmt.Errorf("mark the child's handles inheritable: %w", err)
		}
	}
	for _, r := range []*os.File{outR, errR} {
		if err := inheritable(windows.Handle(r.Fd()), false); err != nil {
			return nil, fmt.Errorf("mark the parent's pipe ends private: %w", err)
		}
	}
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return nil, fmt.Errorf("attribute list: %w", err)
	}
	defer attrs.Delete()
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&handles[0]), uintptr(len(handles))*unsafe.Sizeof(handles[0])); err != nil {
		return nil, fmt.Errorf("inherited-handle list: %w", err)
	}
	var si windows.StartupInfoEx
	si.Cb = uint32(unsafe.Sizeof(si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = handles[0], handles[1], handles[2]
	si.ProcThreadAttributeList = attrs.List()
	app, err := windows.UTF16PtrFromString(p.Program)
	if err != nil {
		return nil, err
	}
	// CreateProcessW may write to lpCommandLine, so it gets its own buffer.
	line, err := windows.UTF16FromString(cmdline)
	if err != nil {
		return nil, err
	}
	dir, err := windows.UTF16PtrFromString(p.Dir)
	if err != nil {
		return nil, err
	}
	c = &child{stdout: outR, stderr: errR}
	if err := windows.CreateProcess(app, &line[0], nil, nil, true, flags, &env[0], dir, &si.StartupInfo, &c.pi); err != nil {
		return nil, fmt.Errorf("CreateProcess %s: %w", p.Program, err)
	}
	return c, nil
}

// Run runs the plan in a new job object with the given output writers
// (nil discards) and returns how it ended. The error is not nil when the
// plan is invalid, the job or the process could not be set up (nothing
// of the program has run then), or ctx ended, which terminates the job;
// a timeout is not an error but Exit.TimedOut. The run ends with the
// program: what it left in the job is terminated.
func (p Plan) Run(ctx context.Context, stdout, stderr io.Writer) (Exit, error) {
	if err := p.validate(); err != nil {
		return Exit{}, err
	}
	if ctx.Err() != nil {
		return Exit{}, context.Cause(ctx)
	}
	cmdline, err := p.commandLine()
	if err != nil {
		return Exit{}, err
	}
	sorted, _ := p.environment()
	env := envBlock(sorted)
	cfg := p.job()
	job, err := newJob(cfg)
	if err != nil {
		return Exit{}, err
	}
	// KILL_ON_JOB_CLOSE: closing the only handle ends every process left.
	defer windows.CloseHandle(job)
	c, err := p.startSuspended(cmdline, env, cfg.CreationFlags)
	if err != nil {
		return Exit{}, err
	}
	defer windows.CloseHandle(c.pi.Process)
	if err := windows.AssignProcessToJobObject(job, c.pi.Process); err != nil {
		windows.TerminateProcess(c.pi.Process, KilledExitCode)
		windows.CloseHandle(c.pi.Thread)
		c.stdout.Close()
		c.stderr.Close()
		return Exit{}, fmt.Errorf("assign the process to its job object (it never ran): %w", err)
	}
	copied := p.copyOutput(c, stdout, stderr)
	start := time.Now()
	_, err = windows.ResumeThread(c.pi.Thread)
	windows.CloseHandle(c.pi.Thread)
	if err != nil {
		terminate(job, c.pi.Process)
		copied(waitDelay)
		return Exit{}, fmt.Errorf("resume the process: %w", err)
	}
	exit, runErr := p.wait(ctx, job, c.pi.Process)
	exit.Wall = time.Since(start)
	// The run ends with the program: stop what it left in the job.
	terminate(job, 0)
	account(job, &exit)
	if err := windows.GetExitCodeProcess(c.pi.Process, &exit.Code); err != nil && runErr == nil {
		runErr = fmt.Errorf("exit code: %w", err)
	}
	if err := copied(waitDelay); err != nil && runErr == nil {
		runErr = fmt.Errorf("copy output: %w", err)
	}
	return exit, runErr
}

// wait waits for process to exit, for the timeout, or for ctx, and
// terminates the job in the last two cases.
func (p Plan) wait(ctx context.Context, job, process windows.Handle) (Exit, error) {
	exited := make(chan error, 1)
	go func() {
		ev, err := windows.WaitForSingleObject(process, windows.INFINITE)
		if err == nil && ev != windows.WAIT_OBJECT_0 {
			err = fmt.Errorf("WaitForSingleObject returned %#x", ev)
		}
		exited <- err
	}()
	var timeout <-chan time.Time
	if p.Timeout > 0 {
		t := time.NewTimer(p.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var exit Exit
	select {
	case err := <-exited:
		if err != nil {
			terminate(job, process)
			return exit, fmt.Errorf("wait for the process: %w", err)
		}
		return exit, nil
	case <-timeout:
		exit.TimedOut = true
		terminate(job, process)
		return exit, <-exited
	case <-ctx.Done():
		terminate(job, process)
		if err := <-exited; err != nil {
			return exit, errors.Join(context.Cause(ctx), err)
		}
		return exit, context.Cause(ctx)
	}
}

// copyOutput copies the child's output to the writers until the pipes
// close. The returned function waits for the copies, at most delay
// before it closes the pipes, and returns the first copy error.
func (p Plan) copyOutput(c *child, stdout, stderr io.Writer) func(delay time.Duration) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, pair := range []struct {
		w io.Writer
		r *os.File
	}{{stdout, c.stdout}, {stderr, c.stderr}} {
		w := pair.w
		if w == nil {
			w = io.Discard
		}
		wg.Add(1)
		go func(r *os.File) {
			defer wg.Done()
			_, err := io.Copy(w, r)
			if errors.Is(err, os.ErrClosed) {
				err = nil // closed by the delay below
			}
			errs <- err
		}(pair.r)
	}
	return func(delay time.Duration) error {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(delay):
			c.stdout.Close()
			c.stderr.Close()
			<-done
		}
		c.stdout.Close()
		c.stderr.Close()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
}
