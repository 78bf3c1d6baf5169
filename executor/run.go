package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/ledger"
)

// runner runs authorized jobs, each on its own goroutine and at most
// Config.Workers at once, and hands their outcomes to the completer. It
// keeps the jobs this executor holds claims on, from the claim until their
// outcome is written, for the heartbeat and the listener (claimHolder) and
// for shutdown.
type runner struct {
	timeout  time.Duration // Config.ToolTimeout
	tools    *toolSet
	metrics  *Metrics
	tracing  tracing
	logger   *slog.Logger
	slots    chan struct{}  // one token per running call
	outcomes chan<- outcome // finished calls, to the completer
	freed    func()         // a slot was freed: the claimer may claim again
	hooks    *testHooks

	mu       sync.Mutex
	inflight map[uuid.UUID]*job // claimed and not yet completed
}

func newRunner(workers int, timeout time.Duration, outcomes chan<- outcome) *runner {
	return &runner{timeout: timeout, slots: make(chan struct{}, workers), outcomes: outcomes, inflight: map[uuid.UUID]*job{}}
}

func (r *runner) free() int { return cap(r.slots) - len(r.slots) }

// start runs an authorized job on its own goroutine; the caller has made
// sure a slot is free.
func (r *runner) start(j *job) {
	r.slots <- struct{}{}
	base, endRun := r.tracing.runContext(j)
	j.ctx, j.cancel = context.WithCancelCause(base)
	j.started = time.Now()
	r.mu.Lock()
	r.inflight[j.id] = j
	r.metrics.setInflight(len(r.inflight))
	r.mu.Unlock()
	go func() {
		r.hooks.reach(hookRunBegin)
		res := r.execute(j)
		r.hooks.reach(hookRunEnd)
		endRun(res)
		r.metrics.ran(r.tools.label(j.tool), j, res)
		o := outcome{job: j, result: res, finished: time.Now()}
		j.done.Store(true)
		// The slot is freed only once the completer has the outcome, so the
		// calls claimed but not yet written stay bounded when it falls behind.
		r.outcomes <- o
		<-r.slots
		r.freed()
	}()
}

// runInline runs an authorized job of an InlineTool on the claimer's
// goroutine, in the claim's transaction, under the executor's timeout,
// with the job's run span: no slot, no completer.
func (r *runner) runInline(j *job) Result {
	base, endRun := r.tracing.runContext(j)
	j.ctx, j.cancel = context.WithCancelCause(base)
	defer j.cancel(nil)
	j.started = time.Now()
	res := r.execute(j)
	endRun(res)
	r.metrics.ran(r.tools.label(j.tool), j, res)
	return res
}

// settled forgets jobs whose outcomes the completer has written or given
// up on (their leases will expire).
func (r *runner) settled(batch []outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range batch {
		delete(r.inflight, o.job.id)
		o.job.cancel(nil)
		endRequest(o.job, o.result)
	}
	r.metrics.setInflight(len(r.inflight))
}

// held lists the requests this executor holds and their claims, in id
// order (the order every statement that locks queue rows uses).
func (r *runner) held() (ids, claims []uuid.UUID) {
	r.mu.Lock()
	ids = make([]uuid.UUID, 0, len(r.inflight))
	claims = make([]uuid.UUID, 0, len(r.inflight))
	for _, j := range r.inflight {
		ids, claims = append(ids, j.id), append(claims, j.claimID)
	}
	r.mu.Unlock()
	sortClaims(ids, claims)
	return ids, claims
}

// cancel stops a local call, if this executor runs it.
func (r *runner) cancel(id uuid.UUID, cause error) {
	r.mu.Lock()
	j := r.inflight[id]
	r.mu.Unlock()
	if j != nil && j.cancel != nil {
		j.cancel(cause)
	}
}

// lost stops the call of a claim the heartbeat found gone. A call that has
// returned was completed (or will find its claim gone at completion); only
// a running call has lost something.
func (r *runner) lost(id uuid.UUID) {
	r.mu.Lock()
	j := r.inflight[id]
	r.mu.Unlock()
	if j != nil && !j.done.Load() {
		r.logger.Warn("lease lost; stopping the call", slog.String("request_id", id.String()))
		j.cancel(errLeaseLost)
	}
}

// shutdown waits for running calls up to grace, then stops them (their
// outcomes record why). It returns when no call is running.
func (r *runner) shutdown(grace time.Duration) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	held := 0
	for held < cap(r.slots) {
		select {
		case r.slots <- struct{}{}:
			held++
			continue
		case <-deadline.C:
		}
		r.mu.Lock()
		for _, j := range r.inflight {
			if j.cancel != nil {
				j.cancel(errShutdown)
			}
		}
		n := len(r.inflight)
		r.mu.Unlock()
		r.logger.Warn("shutdown grace period over: stopping running calls", slog.Int("calls", n))
		for ; held < cap(r.slots); held++ {
			r.slots <- struct{}{}
		}
	}
}

// execute runs the tool under the executor's timeout, turning a panic or a
// malformed result into a runtime_failure rather than a lost request.
func (r *runner) execute(j *job) (res Result) {
	ctx, cancel := context.WithTimeout(j.ctx, r.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("tool panicked", slog.String("tool", j.tool), slog.String("request_id", j.id.String()), slog.Any("panic", p))
			res = failure(ledger.KindRuntimeFailure, fmt.Sprintf("%s: internal error", j.tool))
		}
	}()
	res = j.impl.Run(ctx, j.call())
	events := res.Events
	if res.ErrorKind == "" && ctx.Err() != nil {
		// Finished, but only after it was told to stop: report why it was told.
		res = interrupted(ctx, j.tool)
		res.Events = events
	}
	if res.ErrorKind != "" && !res.ErrorKind.Valid() {
		r.logger.Error("tool returned an unknown error kind", slog.String("tool", j.tool), slog.String("error_kind", string(res.ErrorKind)))
		res = failure(ledger.KindRuntimeFailure, fmt.Sprintf("%s: failed with an unknown error kind %q: %s", j.tool, res.ErrorKind, res.Error))
		res.Events = events
	}
	if len(res.Output) > 0 && !json.Valid(res.Output) {
		res = failure(ledger.KindRuntimeFailure, j.tool+": produced output that is not JSON")
		res.Events = events
	}
	if hasNULEscape(res.Output) {
		res = failure(ledger.KindRuntimeFailure, j.tool+": produced output with a NUL character (\\u0000), which the ledger cannot store")
		res.Events = events
	}
	if len(res.Output) > 0 {
		// The output is stored as execution.finished's "output" member,
		// which encoding/json writes compacted (and with <, > and &
		// escaped): the attestation signs those bytes, the ones an
		// auditor reads back, not the tool's own spelling.
		stored, err := StoredOutput(res.Output)
		if err != nil {
			res = failure(ledger.KindRuntimeFailure, j.tool+": produced output that is not JSON")
			res.Events = events
		} else {
			res.Output = stored
		}
	}
	res.Error = storableText(res.Error)
	if err := checkToolEvents(res.Events); err != nil {
		r.logger.Error("tool recorded a bad event", slog.String("tool", j.tool), slog.String("request_id", j.id.String()), slog.Any("error", err))
		res = failure(ledger.KindRuntimeFailure, fmt.Sprintf("%s: internal error (%v)", j.tool, err))
	}
	if res.Resources == nil {
		res.Resources = map[string]int64{}
	}
	res.Resources["wall_ms"] = time.Since(j.started).Milliseconds()
	return res
}

// reservedEvents are the request stream's own event types, which only the
// ledger's writers write; toolEventTypes are the types a tool's call may
// record, which ledger.executor_record accepts from it. Refusing any other
// here fails that one call; letting it through would fail its whole
// completion batch in the database, again at every retry.
var (
	reservedEvents = eventSet(func(e contract.Event) bool {
		return slices.Contains(e.Streams, contract.RequestPrefix) && !e.ToolRecorded
	})
	toolEventTypes = eventSet(func(e contract.Event) bool { return e.ToolRecorded })
)

func eventSet(keep func(contract.Event) bool) map[string]bool {
	m := map[string]bool{}
	for _, t := range contract.TypesWhere(keep) {
		m[t] = true
	}
	return m
}

// checkToolEvents refuses events a tool may not record: a reserved or
// malformed type, a payload that is not a JSON object, too many.
func checkToolEvents(evs []Event) error {
	if len(evs) > maxToolEvents {
		return fmt.Errorf("%d events recorded, at most %d allowed", len(evs), maxToolEvents)
	}
	for _, ev := range evs {
		if reservedEvents[ev.Type] || !validEventType(ev.Type) || !toolEventTypes[ev.Type] {
			return fmt.Errorf("event type %q may not be recorded by a tool", ev.Type)
		}
		if ev.Stream != "" && !validChannelStream(ev.Stream) {
			return fmt.Errorf("event %s: stream %q is not channel:<name> (1-128 of [A-Za-z0-9._:-])", ev.Type, ev.Stream)
		}
		b, err := json.Marshal(ev.Payload)
		if err != nil {
			return fmt.Errorf("event %s: %w", ev.Type, err)
		}
		if len(b) == 0 || b[0] != '{' {
			return fmt.Errorf("event %s: payload is not a JSON object", ev.Type)
		}
	}
	return nil
}

// maxToolEvents bounds what one call may append to its request stream.
const maxToolEvents = 1000

// validEventType is a dotted lower-case name such as egress.connection.
func validEventType(t string) bool {
	if len(t) == 0 || len(t) > 64 || !strings.Contains(t, ".") || t[0] == '.' || t[len(t)-1] == '.' {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// hasNULEscape reports whether JSON text holds a \u0000 escape, which
// PostgreSQL's jsonb refuses.
func hasNULEscape(b []byte) bool {
	for i := 0; i+5 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] == 'u' && string(b[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character, so that \\u0000 is not taken for one
	}
	return false
}

// storableText makes s fit a text column: valid UTF-8, no NUL.
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// validChannelStream is "channel:" and a name of 1 to 128 characters of
// [A-Za-z0-9._:-], starting with a letter or digit (the run id rule).
func validChannelStream(s string) bool {
	name, ok := strings.CutPrefix(s, "channel:")
	if !ok || len(name) == 0 || len(name) > 128 {
		return false
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._:-", c)) {
			return false
		}
	}
	return true
}

// StoredOutput is output as the ledger stores it in execution.finished
// (encoding/json's compact form, with <, > and & escaped), the bytes an
// attestation's output subject is the digest of.
func StoredOutput(output json.RawMessage) ([]byte, error) {
	return json.Marshal(output)
}
