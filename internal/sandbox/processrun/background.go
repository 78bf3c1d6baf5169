//go:build linux

package processrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/ledger"
)

// BackgroundConfig configures background processes (process.run with
// "background"). Without a Recorder they are refused (capability_denied).
type BackgroundConfig struct {
	// Recorder records them in the ledger: handles are events on stream
	// process:<handle> and rows of ledger.processes.
	Recorder Recorder
	// MaxProcesses bounds the background processes this executor process
	// supervises at once; 0 means 16.
	MaxProcesses int
	// MaxPerRun bounds the running background processes of one run, over
	// every executor; 0 means 4.
	MaxPerRun int
	// StartupCheck is how long a new background process must live before
	// process.run returns its handle; one that ends sooner is reported as
	// a foreground call. 0 means 250 ms (Palyra's).
	StartupCheck time.Duration
	// Poll is how often the executor looks for stop requests and ended
	// runs of its running processes; 0 means 500 ms.
	Poll time.Duration
	// OrphanScan is how often it looks for processes of dead executors on
	// this host; 0 means 30 s.
	OrphanScan time.Duration
	// Logger receives what cannot be returned to a caller; nil discards.
	Logger *slog.Logger
}

// End reasons of a background process (process.ended's end_reason).
const (
	EndExited          = "exited"            // the process ended by itself
	EndStopped         = "stopped"           // process.stop
	EndRunEnded        = "run_ended"         // ledger.end_run, for run_owned processes
	EndLifetime        = "lifetime_expired"  // its lifetime passed
	EndQuota           = "quota_exceeded"    // it passed a limit: its output budget, or one named by limit_exceeded
	EndShutdown        = "executor_shutdown" // the executor stopped
	EndOrphaned        = "orphaned"          // its executor died; found and killed
	EndLostWithOwner   = "lost"              // its executor died; not found
	processStreamLabel = "process:"
)

// Causes a supervisor is told to stop with.
var (
	errStopRequested = errors.New("process.stop requested")
	errRunEnded      = errors.New("the run ended")
	errShutdown      = errors.New("the executor is shutting down")
)

// background supervises the background processes of one Tool.
type background struct {
	t      *Tool
	cfg    BackgroundConfig
	me     identity
	logger *slog.Logger

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	loop   sync.WaitGroup

	mu     sync.Mutex
	procs  map[uuid.UUID]*bgProc
	closed bool
	sups   sync.WaitGroup // supervisors
}

// bgProc is one supervised background process.
type bgProc struct {
	handle    uuid.UUID
	requestID uuid.UUID
	principal string
	runID     string
	mode      string
	ctx       context.Context
	stop      context.CancelCauseFunc
	ended     chan struct{} // closed once process.ended is recorded (or given up)

	mu      sync.Mutex
	run     *running
	queue   []executor.Event // recorded, not yet appended
	started bool             // process.started committed: the queue may flow
	wake    chan struct{}
}

func newBackground(t *Tool, cfg BackgroundConfig) (*background, error) {
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = 16
	}
	if cfg.MaxPerRun <= 0 {
		cfg.MaxPerRun = 4
	}
	if cfg.StartupCheck <= 0 {
		cfg.StartupCheck = 250 * time.Millisecond
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.OrphanScan <= 0 {
		cfg.OrphanScan = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	me, err := selfIdentity()
	if err != nil {
		return nil, fmt.Errorf("processrun: background: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{t: t, cfg: cfg, me: me, logger: cfg.Logger,
		ctx: ctx, cancel: cancel, procs: map[uuid.UUID]*bgProc{}}
	// Dead executors' processes are accounted for before anything else
	// (and before Tool.SweepOrphans kills what is left in their cgroups).
	b.recoverOrphans(ctx)
	b.loop.Go(b.watch)
	return b, nil
}

func processStream(h uuid.UUID) string { return processStreamLabel + h.String() }

// start runs l as a background process of call: see the package
// documentation.
func (b *background) start(ctx context.Context, call executor.Call, plan *procinput.Plan, l *launch) executor.Result {
	if call.RunID == "" {
		l.abort()
		return failure(ledger.KindInvalidInput, "a background process belongs to a run: submit it with a run_id")
	}
	if plan.Timeout <= b.cfg.StartupCheck {
		// It cannot outlive the startup check: a foreground call.
		return b.t.foreground(ctx, l, plan.Timeout)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		l.abort()
		return failure(ledger.KindSpawnFailed, "the executor is shutting down")
	}
	if len(b.procs) >= b.cfg.MaxProcesses {
		n := len(b.procs)
		b.mu.Unlock()
		l.abort()
		return failure(ledger.KindQuotaExceeded, fmt.Sprintf("this executor already supervises %d background processes (limit %d)", n, b.cfg.MaxProcesses))
	}
	p := &bgProc{handle: uuid.Must(uuid.NewV7()), requestID: call.RequestID, principal: call.Principal,
		runID: call.RunID, mode: plan.Background, ended: make(chan struct{}), wake: make(chan struct{}, 1)}
	p.ctx, p.stop = context.WithCancelCause(b.ctx)
	b.procs[p.handle] = p
	b.mu.Unlock()

	running, err := b.cfg.Recorder.CountRunning(ctx, call.Principal, call.RunID)
	if err == nil && running >= b.cfg.MaxPerRun {
		b.forget(p)
		l.abort()
		return failure(ledger.KindQuotaExceeded, fmt.Sprintf("run %s already has %d running background processes (limit %d)", call.RunID, running, b.cfg.MaxPerRun))
	}
	if err != nil {
		b.forget(p)
		l.abort()
		return failure(ledger.KindSpawnFailed, "background processes: "+err.Error())
	}

	l.record = p.record
	type startMsg struct {
		res executor.Result
		ok  bool
	}
	started := make(chan startMsg, 1)
	b.sups.Add(1)
	// The supervisor owns the process from its start to its recorded end.
	// It stays on one OS thread: PDEATHSIG fires when the thread that
	// started the child exits, so that thread must live as long as the
	// process (and the process dies with the executor).
	go func() {
		defer b.sups.Done()
		defer b.forget(p)
		defer close(p.ended)
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine, after the
		// process is gone.
		r, err := b.t.begin(ctx, l)
		if err != nil {
			l.abort()
			started <- startMsg{res: withEnf(b.t.startFailure(ctx, err), l.enf)}
			return
		}
		begun := time.Now()
		select {
		case <-r.done:
			// Ended within the startup check: a foreground call after all.
			res := l.result(b.t.wait(ctx, r, plan.Timeout))
			res.Events = append(p.drain(), res.Events...)
			started <- startMsg{res: res}
			return
		case <-time.After(b.cfg.StartupCheck):
		}
		start, err := pidStart(r.pid)
		expires := begun.Add(plan.Timeout)
		if err == nil {
			err = b.recordStarted(p, plan, r.pid, start, begun, expires)
		}
		if err != nil {
			b.t.stop(r.pid, r.done)
			b.t.wait(ctx, r, plan.Timeout)
			started <- startMsg{res: withEnf(failure(ledger.KindSpawnFailed, "the background process could not be recorded and was stopped: "+err.Error()), l.enf)}
			return
		}
		p.mu.Lock()
		p.run, p.started = r, true
		p.mu.Unlock()
		p.kick()
		out := backgroundOutput{Handle: p.handle, Stream: processStream(p.handle), State: "running", Mode: p.mode,
			PID: r.pid, StartedAt: begun.UTC(), ExpiresAt: expires.UTC(), LifetimeMS: plan.Timeout.Milliseconds(),
			Tier: b.t.cfg.Tier, SandboxBackend: b.t.backend(), StatusTool: "process.status", StopTool: "process.stop"}
		raw, _ := json.Marshal(out)
		enf := maps(l.enf, map[string]any{"background": map[string]any{"mode": p.mode, "lifetime_ms": plan.Timeout.Milliseconds(),
			"dies_with_executor": true, "orphan_recovery": "process:<handle> stream, ledger.processes"}})
		started <- startMsg{ok: true, res: executor.Result{Output: raw, Enforcement: enf,
			Resources: map[string]int64{"startup_ms": time.Since(begun).Milliseconds()}}}

		// Lifetime is counted from the start, not from the end of the check.
		o := b.t.wait(p.ctx, r, time.Until(expires))
		res := l.result(o)
		b.recordEnded(p, o, res)
	}()
	msg := <-started
	return msg.res
}

// backgroundOutput is process.run's output for a background process.
type backgroundOutput struct {
	Handle         uuid.UUID `json:"handle"`
	Stream         string    `json:"stream"`
	State          string    `json:"state"`
	Mode           string    `json:"mode"`
	PID            int       `json:"pid"`
	StartedAt      time.Time `json:"started_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	LifetimeMS     int64     `json:"lifetime_ms"`
	Tier           string    `json:"tier"`
	SandboxBackend string    `json:"sandbox_backend"`
	StatusTool     string    `json:"status_tool"`
	StopTool       string    `json:"stop_tool"`
}

func maps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func (b *background) forget(p *bgProc) {
	b.mu.Lock()
	delete(b.procs, p.handle)
	b.mu.Unlock()
}

// record queues an event the sandbox observed; the appender writes it to
// the process stream once process.started is there.
func (p *bgProc) record(ev executor.Event) {
	p.mu.Lock()
	p.queue = append(p.queue, ev)
	p.mu.Unlock()
	p.kick()
}

func (p *bgProc) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// drain takes the queued events.
func (p *bgProc) drain() []executor.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	return q
}

func (b *background) meta(p *bgProc) ledger.Metadata {
	return ledger.Metadata{Actor: b.me.String(), CorrelationID: p.requestID.String()}
}

// recordStarted records process.started, and with it the row
// (ledger.process_start checks that this executor's login holds the call).
func (b *background) recordStarted(p *bgProc, plan *procinput.Plan, pid int, start uint64, begun, expires time.Time) error {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return b.cfg.Recorder.Start(ctx, ledger.ProcessStarted{
		Handle: p.handle, RequestID: p.requestID, Principal: p.principal, RunID: p.runID,
		Mode: p.mode, Tier: b.t.cfg.Tier, Executor: b.t.Executor(), Command: plan.Command, Args: plan.Args,
		PID: pid, PIDStart: start, Owner: b.me.String(),
		StartedAt: begun, ExpiresAt: expires, LifetimeMS: plan.Timeout.Milliseconds(),
	}, b.meta(p))
}

// flush appends p's queued events, retrying until they are written or
// the deadline passes.
func (b *background) flush(ctx context.Context, p *bgProc) {
	evs := p.drain()
	if len(evs) == 0 {
		return
	}
	nes := make([]ledger.NewEvent, len(evs))
	for i, ev := range evs {
		nes[i] = ledger.NewEvent{Type: ev.Type, Payload: ev.Payload, Metadata: b.meta(p)}
	}
	b.retry(ctx, "append process events", func(ctx context.Context) error {
		_, err := b.cfg.Recorder.Record(ctx, p.handle, uuid.Nil, nes...)
		return err
	})
}

// retry runs f until it succeeds or ctx ends, backing off.
func (b *background) retry(ctx context.Context, what string, f func(context.Context) error) bool {
	wait := 50 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil {
			return true
		}
		b.logger.Warn("background process: "+what+" failed; retrying", slog.Any("error", err))
		select {
		case <-ctx.Done():
			b.logger.Error("background process: "+what+" abandoned", slog.Any("error", err))
			return false
		case <-time.After(wait):
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// recordEnded writes the events still queued, then process.ended, which
// ends the row. It keeps trying for a minute past shutdown: losing the
// end of a process would leave it "running" in the ledger.
func (b *background) recordEnded(p *bgProc, o outcome, res executor.Result) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), time.Minute)
	defer cancel()
	// Events the result carries come after those observed while running.
	for _, ev := range res.Events {
		p.record(ev)
	}
	b.flush(ctx, p)
	var out runOutput
	if len(res.Output) > 0 {
		_ = json.Unmarshal(res.Output, &out)
	}
	reason := EndExited
	switch {
	case o.cancelled && errors.Is(o.cause, errStopRequested):
		reason = EndStopped
	case o.cancelled && errors.Is(o.cause, errRunEnded):
		reason = EndRunEnded
	case o.cancelled:
		reason = EndShutdown
	case o.timedOut:
		reason = EndLifetime
	case o.overflow, out.LimitExceeded != "":
		reason = EndQuota
	}
	code, sig := -1, out.Signal
	if res.ExitStatus != nil {
		code = *res.ExitStatus
	}
	result := map[string]any{
		"handle": p.handle, "end_reason": reason, "exit_code": code, "signal": sig,
		"error_kind": strp(string(res.ErrorKind)), "error": strp(res.Error), "output": json.RawMessage(nonEmpty(res.Output)),
		"resources": res.Resources,
	}
	raw, err := json.Marshal(result)
	if err != nil {
		b.logger.Error("background process: cannot encode its end", slog.Any("error", err))
		return
	}
	ev := ledger.NewEvent{Type: "process.ended", Payload: json.RawMessage(raw), Metadata: b.meta(p)}
	b.retry(ctx, "record process.ended", func(ctx context.Context) error {
		_, err := b.cfg.Recorder.Record(ctx, p.handle, uuid.Nil, ev)
		return err
	})
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// watch is the manager's loop: it writes observed events as they come,
// stops processes whose stop was requested or whose run ended, and
// accounts for the processes of dead executors.
func (b *background) watch() {
	poll := time.NewTicker(b.cfg.Poll)
	defer poll.Stop()
	scan := time.NewTicker(b.cfg.OrphanScan)
	defer scan.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-poll.C:
			b.flushAll()
			b.pollStops()
		case <-scan.C:
			b.recoverOrphans(b.ctx)
		}
	}
}

// flushAll writes the observed events of every started process.
func (b *background) flushAll() {
	b.mu.Lock()
	ps := make([]*bgProc, 0, len(b.procs))
	for _, p := range b.procs {
		ps = append(ps, p)
	}
	b.mu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
		ready := p.started && len(p.queue) > 0
		p.mu.Unlock()
		if ready {
			ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
			b.flush(ctx, p)
			cancel()
		}
	}
}

// pollStops stops this executor's processes that process.stop asked to
// stop, and the run_owned ones whose run ended.
func (b *background) pollStops() {
	b.mu.Lock()
	n := len(b.procs)
	b.mu.Unlock()
	if n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	stops, err := b.cfg.Recorder.ToStop(ctx, b.me.String())
	if err != nil {
		if b.ctx.Err() == nil {
			b.logger.Warn("background processes: poll failed", slog.Any("error", err))
		}
		return
	}
	for _, s := range stops {
		cause := errRunEnded
		if s.StopRequested {
			cause = errStopRequested
		}
		b.signal(s.Handle, cause)
	}
}

// signal tells h's supervisor, if it is ours, to stop the process.
func (b *background) signal(h uuid.UUID, cause error) bool {
	b.mu.Lock()
	p := b.procs[h]
	b.mu.Unlock()
	if p == nil {
		return false
	}
	p.stop(cause)
	return true
}

// close stops every background process and waits, until ctx ends, for
// their ends to be recorded.
func (b *background) close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	ps := make([]*bgProc, 0, len(b.procs))
	for _, p := range b.procs {
		ps = append(ps, p)
	}
	b.mu.Unlock()
	for _, p := range ps {
		p.stop(errShutdown)
	}
	done := make(chan struct{})
	go func() {
		b.sups.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("processrun: background processes still being recorded: %w", ctx.Err())
	}
	b.cancel()
	b.loop.Wait()
	return err
}

// recoverOrphans accounts for the running processes of executors on this
// host that are gone: a process still alive is killed and recorded as
// ended (orphaned); one already gone is recorded as lost. Processes of
// executors on other hosts are theirs to account for, except after a
// reboot of this host, when none of its processes can still run.
func (b *background) recoverOrphans(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	found, err := b.cfg.Recorder.Running(ctx, b.me.host+"/", b.me.String())
	if err != nil {
		if ctx.Err() == nil {
			b.logger.Warn("background processes: orphan scan failed", slog.Any("error", err))
		}
		return
	}
	for _, r := range found {
		owner, err := parseIdentity(r.Owner)
		if err != nil {
			continue
		}
		if owner.boot == b.me.boot && alive(owner.pid, owner.start) {
			continue // its executor lives: its own supervisor accounts for it
		}
		killed := 0
		if owner.boot == b.me.boot && alive(r.PID, r.PIDStart) {
			killed = killTree(r.PID, r.PIDStart)
		}
		typ, reason := "process.lost", EndLostWithOwner
		if killed > 0 {
			typ, reason = "process.ended", EndOrphaned
		}
		payload := map[string]any{"handle": r.Handle, "end_reason": reason, "owner": r.Owner, "recovered_by": b.me.String(),
			"processes_killed": killed, "rebooted": owner.boot != b.me.boot}
		ev := ledger.NewEvent{Type: typ, Payload: payload, Metadata: ledger.Metadata{Actor: b.me.String(), CorrelationID: r.RequestID.String()}}
		if _, err := b.cfg.Recorder.Record(ctx, r.Handle, uuid.Nil, ev); err != nil {
			b.logger.Warn("background processes: recording an orphan failed", slog.String("handle", r.Handle.String()), slog.Any("error", err))
			continue
		}
		b.logger.Warn("background process of a dead executor accounted for", slog.String("handle", r.Handle.String()),
			slog.String("owner", r.Owner), slog.String("end_reason", reason), slog.Int("killed", killed))
	}
}

// killTree SIGKILLs the process pid (if it is still the one that started
// at start) and everything below it, and returns how many it signalled.
// A pidfd pins the process, so the kill cannot reach a reused pid.
func killTree(pid int, start uint64) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	if !alive(pid, start) {
		return 0
	}
	below := descendants(pid)
	n := 0
	// Stop the root first so that it cannot fork replacements, then the rest.
	if unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0) == nil {
		n++
	}
	for _, d := range below {
		if syscall.Kill(d, syscall.SIGKILL) == nil {
			n++
		}
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	return n
}
