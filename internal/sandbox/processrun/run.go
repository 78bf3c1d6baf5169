//go:build linux

package processrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
	"github.com/execledger/execledger/ledger"
)

// capture reads stdout and stderr against one shared budget.
type capture struct {
	mu     sync.Mutex
	left   int
	out    [2][]byte
	trunc  [2]bool
	over   chan struct{}
	once   sync.Once
	passed bool
}

func newCapture(limit int) *capture {
	return &capture{left: limit, over: make(chan struct{})}
}

// read copies r into stream i in 4 KiB chunks until EOF or an error. Past
// the budget it keeps reading and discarding, so the writer never blocks
// while it is being stopped.
func (c *capture) read(i int, r *os.File) {
	chunk := make([]byte, chunkSize)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			c.mu.Lock()
			take := min(n, c.left)
			c.out[i] = append(c.out[i], chunk[:take]...)
			c.left -= take
			if take < n {
				c.trunc[i] = true
				c.passed = true
				c.once.Do(func() { close(c.over) })
			}
			c.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// outcome is how a supervised process ended.
type outcome struct {
	stdout, stderr         []byte
	stdoutTrunc, stderrTrn bool
	overflow               bool
	timedOut, cancelled    bool
	cause                  error
	state                  *os.ProcessState
	wall                   time.Duration
}

// launch is a process a tier has prepared: how to start it, and how to
// turn its end into a Result.
type launch struct {
	cmd *exec.Cmd
	// start starts cmd and releases what only the child needed.
	start func() error
	// enf is the enforcement record.
	enf map[string]any
	// abort releases what prepare made when the process never started.
	abort func()
	// result classifies the ended process.
	result func(o outcome) executor.Result
	// record receives the events the sandbox observes while the process
	// runs (egress.connection, ...), in order, from any goroutine. The
	// caller sets it before begin: foreground calls put them in the
	// Result, background processes append them to their own stream.
	record func(executor.Event)
}

// running is a started process whose output is being captured.
type running struct {
	l       *launch
	pid     int
	begin   time.Time
	c       *capture
	readers sync.WaitGroup
	done    chan struct{}
	rOut    *os.File
	rErr    *os.File
}

// begin starts l with its output captured against the output budget.
func (t *Tool) begin(ctx context.Context, l *launch) (*running, error) {
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	rErr, wErr, err := os.Pipe()
	if err != nil {
		rOut.Close()
		wOut.Close()
		return nil, err
	}
	l.cmd.Stdout, l.cmd.Stderr = wOut, wErr
	if err := ctx.Err(); err != nil {
		closeFiles([]*os.File{rOut, wOut, rErr, wErr})
		return nil, err
	}
	r := &running{l: l, begin: time.Now(), c: newCapture(t.cfg.OutputLimit), done: make(chan struct{}), rOut: rOut, rErr: rErr}
	err = l.start()
	wOut.Close()
	wErr.Close()
	if err != nil {
		rOut.Close()
		rErr.Close()
		return nil, err
	}
	r.pid = l.cmd.Process.Pid
	r.readers.Go(func() { r.c.read(0, rOut) })
	r.readers.Go(func() { r.c.read(1, rErr) })
	go func() {
		_ = l.cmd.Wait()
		close(r.done)
	}()
	return r, nil
}

// wait supervises r until it ends, stopping its tree when timeout passes,
// ctx is done (cancelled, with context.Cause as the reason) or its output
// passes the budget.
func (t *Tool) wait(ctx context.Context, r *running, timeout time.Duration) outcome {
	var o outcome
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case <-r.done:
	case <-r.c.over:
		t.stop(r.pid, r.done)
	case <-runCtx.Done():
		t.stop(r.pid, r.done)
		switch {
		case ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			o.cancelled, o.cause = true, context.Cause(ctx)
		default:
			o.timedOut = true
		}
	}
	o.wall = time.Since(r.begin)
	// Everything below the process is gone by now (tier B's init and tier
	// C's pid namespace kill the rest); a stray writer cannot hold us.
	deadline := time.Now().Add(t.cfg.KillGrace + time.Second)
	_ = r.rOut.SetReadDeadline(deadline)
	_ = r.rErr.SetReadDeadline(deadline)
	r.readers.Wait()
	r.rOut.Close()
	r.rErr.Close()
	c := r.c
	c.mu.Lock()
	o.stdout, o.stderr = c.out[0], c.out[1]
	o.stdoutTrunc, o.stderrTrn = c.trunc[0], c.trunc[1]
	o.overflow = c.passed
	c.mu.Unlock()
	o.state = r.l.cmd.ProcessState
	return o
}

// foreground runs l to its end within timeout; the events it records
// come back in the Result.
func (t *Tool) foreground(ctx context.Context, l *launch, timeout time.Duration) executor.Result {
	var mu sync.Mutex
	var events []executor.Event
	l.record = func(ev executor.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	r, err := t.begin(ctx, l)
	if err != nil {
		l.abort()
		return withEnf(t.startFailure(ctx, err), l.enf)
	}
	res := l.result(t.wait(ctx, r, timeout))
	mu.Lock()
	res.Events = append(events, res.Events...)
	mu.Unlock()
	return res
}

// stop ends the tree rooted at pid: SIGTERM to its process group, then
// after KillGrace SIGKILL to every descendant and the group.
func (t *Tool) stop(pid int, done <-chan struct{}) {
	// TERM goes to every descendant, not to pid itself: bubblewrap passes
	// no signal on, and it must live through the grace period (its death
	// kills the sandbox at once); tier B's init ends by itself once its
	// target has. A program that left the group (setsid) gets the same
	// grace as the rest. With nothing below pid yet, pid's group gets it.
	below := descendants(pid)
	for _, d := range below {
		_ = syscall.Kill(d, syscall.SIGTERM)
	}
	if len(below) == 0 {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
	timer := time.NewTimer(t.cfg.KillGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	// Even when the leader has ended, descendants that left its group may
	// not have: kill whatever is left below it (twice, for forks racing the
	// first sweep).
	for range 2 {
		for _, d := range descendants(pid) {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	<-done
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// startFailure is the result of a process that never started.
func (t *Tool) startFailure(ctx context.Context, err error) executor.Result {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			r := failure(ledger.KindTimedOut, "timed out before the process started")
			r.TimedOut = true
			return r
		}
		return failure(ledger.KindCancelled, fmt.Sprintf("cancelled before the process started: %v", context.Cause(ctx)))
	}
	return failure(ledger.KindSpawnFailed, err.Error())
}

func withEnf(r executor.Result, enf map[string]any) executor.Result {
	r.Enforcement = enf
	return r
}

// exit is how a process that started ended, as far as its tier can tell.
type exit struct {
	code int // the exit status, 128+sig after a signal
	sig  int // the signal that ended it, 0 if none
	// targetCPUMS is the program's own CPU time (procinit.Usage's
	// TargetCPUMS), -1 when unknown.
	targetCPUMS int64
	// spawnFailed: the sandbox could not start the program.
	spawnFailed bool
	// unreported: the init did not report the program's end (it was
	// killed, or the sandbox died around it); code and sig are the init's
	// or bubblewrap's.
	unreported bool
}

// exitOf is the exit of the process the executor waited for.
func exitOf(ps *os.ProcessState) exit {
	if ps == nil {
		return exit{code: -1, targetCPUMS: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exit{code: 128 + int(ws.Signal()), sig: int(ws.Signal()), targetCPUMS: -1}
	}
	return exit{code: ps.ExitCode(), targetCPUMS: -1}
}

// initExit is the program's exit as the sandbox init reported it; stderr
// tells the init's own failures to start it.
func initExit(u procinit.Usage, stderr []byte) exit {
	return exit{
		code: u.ExitCode, sig: u.Signal, targetCPUMS: u.TargetCPUMS,
		spawnFailed: u.ExitCode >= procinit.ExitInitFailed && u.ExitCode <= procinit.ExitNotFound && u.Signal == 0 &&
			bytes.HasPrefix(stderr, []byte("sandbox init: ")),
	}
}

// addUsage records the init's figures: the usage of every process that
// ran under it.
func addUsage(r map[string]int64, u procinit.Usage) {
	r["cpu_user_ms"] = u.CPUUserMS
	r["cpu_sys_ms"] = u.CPUSysMS
	r["max_rss_kb"] = u.MaxRSSKB
	r["descendants_killed"] = int64(u.DescendantsKilled)
}

func addRusage(r map[string]int64, ps *os.ProcessState) {
	if ps == nil {
		return
	}
	r["cpu_user_ms"] = ps.UserTime().Milliseconds()
	r["cpu_sys_ms"] = ps.SystemTime().Milliseconds()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r["max_rss_kb"] = ru.Maxrss
	}
}

// text makes captured bytes storable (see storable).
func (t *Tool) text(b []byte) (string, bool) { return storable(t.red, b) }

// finish classifies a run that started and builds its Result.
func (t *Tool) finish(res executor.Result, o outcome, e exit) executor.Result {
	out := runOutput{
		ExitCode: e.code, Signal: e.sig, StdoutTruncated: o.stdoutTrunc, StderrTruncated: o.stderrTrn,
		DurationMS: o.wall.Milliseconds(), Tier: t.cfg.Tier, SandboxBackend: t.backend(),
	}
	out.Stdout, out.StdoutLossy = t.text(o.stdout)
	out.Stderr, out.StderrLossy = t.text(o.stderr)
	res.Resources["output_bytes"] = int64(len(o.stdout) + len(o.stderr))
	res.ErrorKind, res.Error, out.LimitExceeded = t.classify(o, e, res.Resources, out.Stderr)
	res.TimedOut = res.ErrorKind == ledger.KindTimedOut
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err == nil {
		res.Output = json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
	}
	if o.state != nil {
		c := e.code
		res.ExitStatus = &c
	}
	return res
}

// classify returns the error kind and message of a run that ended with e
// (none for a success), and the limit that ended it, if one did; stderr is
// the stored standard error, r the figures recorded.
func (t *Tool) classify(o outcome, e exit, r map[string]int64, stderr string) (kind ledger.ErrorKind, msg, limit string) {
	switch {
	case o.timedOut:
		return ledger.KindTimedOut, "the process exceeded its timeout and was killed", ""
	case o.cancelled:
		return ledger.KindCancelled, fmt.Sprintf("cancelled: %v", o.cause), ""
	case o.overflow:
		return ledger.KindQuotaExceeded, fmt.Sprintf("output exceeded %d bytes; the process was stopped and the output truncated", t.cfg.OutputLimit), limitOutput
	case e.spawnFailed:
		return ledger.KindSpawnFailed, "the sandbox could not start the program: " + firstLine(stderr), ""
	}
	if limit, msg := t.limitHit(e, r); limit != "" {
		return ledger.KindQuotaExceeded, msg, limit
	}
	switch {
	case e.unreported:
		return ledger.KindRuntimeFailure, fmt.Sprintf("the sandbox init ended (status %d) without reporting how the program ended", e.code), ""
	case e.code != 0:
		return ledger.KindRuntimeFailure, fmt.Sprintf("the process exited with status %d", e.code), ""
	}
	return "", "", ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func (t *Tool) seccompSummary(f *seccomp.Filter) map[string]any {
	return map[string]any{
		"arch":       f.Arch(),
		"allow_inet": f.Options().AllowInet,
		"denied":     f.Denied(),
		"rules":      len(f.Rules()),
	}
}

func envNames(env []string) []string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return names
}
