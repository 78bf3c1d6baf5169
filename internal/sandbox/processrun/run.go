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
	"unicode/utf8"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/seccomp"
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

// supervise starts cmd with start, captures its output and stops its tree
// on timeout, cancellation or overflow. A start error is returned as is.
func (t *Tool) supervise(ctx context.Context, cmd *exec.Cmd, start func() error, timeout time.Duration) (outcome, error) {
	var o outcome
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return o, err
	}
	defer rOut.Close()
	rErr, wErr, err := os.Pipe()
	if err != nil {
		wOut.Close()
		return o, err
	}
	defer rErr.Close()
	cmd.Stdout, cmd.Stderr = wOut, wErr
	if err := ctx.Err(); err != nil {
		wOut.Close()
		wErr.Close()
		return o, err
	}
	begin := time.Now()
	err = start()
	wOut.Close()
	wErr.Close()
	if err != nil {
		return o, err
	}
	c := newCapture(t.cfg.OutputLimit)
	var readers sync.WaitGroup
	readers.Go(func() { c.read(0, rOut) })
	readers.Go(func() { c.read(1, rErr) })
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pid := cmd.Process.Pid
	select {
	case <-done:
	case <-c.over:
		t.stop(pid, done)
	case <-runCtx.Done():
		t.stop(pid, done)
		switch {
		case ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			o.cancelled, o.cause = true, context.Cause(ctx)
		default:
			o.timedOut = true
		}
	}
	o.wall = time.Since(begin)
	// Everything below the process is gone by now (tier B's init and tier
	// C's pid namespace kill the rest); a stray writer cannot hold us.
	deadline := time.Now().Add(t.cfg.KillGrace + time.Second)
	_ = rOut.SetReadDeadline(deadline)
	_ = rErr.SetReadDeadline(deadline)
	readers.Wait()
	c.mu.Lock()
	o.stdout, o.stderr = c.out[0], c.out[1]
	o.stdoutTrunc, o.stderrTrn = c.trunc[0], c.trunc[1]
	o.overflow = c.passed
	c.mu.Unlock()
	o.state = cmd.ProcessState
	return o, nil
}

// stop ends the tree rooted at pid: SIGTERM to its process group, then
// after KillGrace SIGKILL to every descendant and the group.
func (t *Tool) stop(pid int, done <-chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
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
			r := failure(KindTimedOut, "timed out before the process started")
			r.TimedOut = true
			return r
		}
		return failure(KindCancelled, fmt.Sprintf("cancelled before the process started: %v", context.Cause(ctx)))
	}
	return failure(KindSpawnFailed, err.Error())
}

func withEnf(r executor.Result, enf map[string]any) executor.Result {
	r.Enforcement = enf
	return r
}

// exitOf returns the exit code (128+signal for a signal) and signal.
func exitOf(ps *os.ProcessState) (code, sig int) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ps.ExitCode(), 0
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

// runOutput is the stored output of a run.
type runOutput struct {
	ExitCode        int    `json:"exit_code"`
	Signal          int    `json:"signal,omitempty"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	StdoutLossy     bool   `json:"stdout_lossy,omitempty"`
	StderrLossy     bool   `json:"stderr_lossy,omitempty"`
	DurationMS      int64  `json:"duration_ms"`
	Tier            string `json:"tier"`
	SandboxBackend  string `json:"sandbox_backend"`
}

// text makes captured bytes storable: valid UTF-8 (U+FFFD for bad bytes),
// redacted. JSON encoding escapes the control characters.
func (t *Tool) text(b []byte) (string, bool) {
	lossy := !utf8.Valid(b)
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return t.red.String(s), lossy
}

// finish classifies a run that started and builds its Result.
func (t *Tool) finish(res executor.Result, o outcome, code, sig int, spawnFailed bool) executor.Result {
	out := runOutput{
		ExitCode: code, Signal: sig, StdoutTruncated: o.stdoutTrunc, StderrTruncated: o.stderrTrn,
		DurationMS: o.wall.Milliseconds(), Tier: t.cfg.Tier, SandboxBackend: t.backend(),
	}
	out.Stdout, out.StdoutLossy = t.text(o.stdout)
	out.Stderr, out.StderrLossy = t.text(o.stderr)
	res.Resources["output_bytes"] = int64(len(o.stdout) + len(o.stderr))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err == nil {
		res.Output = json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
	}
	if o.state != nil {
		c := code
		res.ExitStatus = &c
	}
	switch {
	case o.timedOut:
		res.ErrorKind, res.Error, res.TimedOut = KindTimedOut, "the process exceeded its timeout and was killed", true
	case o.cancelled:
		res.ErrorKind, res.Error = KindCancelled, fmt.Sprintf("cancelled: %v", o.cause)
	case o.overflow:
		res.ErrorKind = KindQuotaExceeded
		res.Error = fmt.Sprintf("output exceeded %d bytes; the process was stopped and the output truncated", t.cfg.OutputLimit)
	case spawnFailed:
		res.ErrorKind, res.Error = KindSpawnFailed, "the sandbox could not start the program: "+firstLine(out.Stderr)
	case code != 0:
		res.ErrorKind, res.Error = KindRuntimeFailure, fmt.Sprintf("the process exited with status %d", code)
	}
	return res
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
