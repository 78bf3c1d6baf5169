//go:build linux

package processrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/ledger"
)

// ProcessTool is process.status or process.stop: they address a background
// process by the handle process.run returned, and only within the run
// that started it — the caller's principal and run_id must be the
// process's. A handle of another run, of another principal or of nobody
// gets the same capability_denied answer, so handles cannot be probed.
// There is no way to name a process by pid.
type ProcessTool struct {
	b    *background
	stop bool
}

var _ executor.Tool = (*ProcessTool)(nil)

// StatusTool returns process.status, or nil when background processes
// are not configured.
func (t *Tool) StatusTool() *ProcessTool {
	if t.bg == nil {
		return nil
	}
	return &ProcessTool{b: t.bg}
}

// StopTool returns process.stop, or nil when background processes are not
// configured.
func (t *Tool) StopTool() *ProcessTool {
	if t.bg == nil {
		return nil
	}
	return &ProcessTool{b: t.bg, stop: true}
}

// Name is process.status or process.stop.
func (pt *ProcessTool) Name() string {
	if pt.stop {
		return "process.stop"
	}
	return "process.status"
}

// Executor is "builtin": these tools run no sandboxed code.
func (pt *ProcessTool) Executor() string { return "builtin" }

// Tier is "builtin".
func (pt *ProcessTool) Tier() string { return "builtin" }

// SafeToRepeat is true: asking twice, or stopping twice, does no harm.
func (pt *ProcessTool) SafeToRepeat() bool { return true }

// Prepare parses {"handle": "<uuid>"} strictly and requires a run_id;
// Run gets the handle.
func (pt *ProcessTool) Prepare(_ context.Context, call executor.Call) (any, error) {
	h, err := parseHandle(call.Input)
	if err != nil {
		return nil, &executor.Refusal{Kind: ledger.KindInvalidInput, Message: err.Error()}
	}
	if call.RunID == "" {
		return nil, &executor.Refusal{Kind: ledger.KindCapabilityDenied, Reason: "process.run_id_missing",
			Message: pt.Name() + " addresses the background processes of the caller's run: submit it with that run_id"}
	}
	return h, nil
}

// parseHandle decodes {"handle": "<uuid>"}: nothing else, no unknown or
// duplicate fields.
func parseHandle(raw json.RawMessage) (uuid.UUID, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return uuid.Nil, errors.New(`input must be {"handle": "<uuid>"}`)
	}
	var handle *string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return uuid.Nil, fmt.Errorf("input: %w", err)
		}
		if k != "handle" {
			return uuid.Nil, fmt.Errorf("input: unknown field %q; only \"handle\" is accepted (processes are named by handle, never by pid)", k)
		}
		if handle != nil {
			return uuid.Nil, errors.New(`input: duplicate field "handle"`)
		}
		var s string
		if err := dec.Decode(&s); err != nil {
			return uuid.Nil, errors.New(`input: "handle" must be a string`)
		}
		handle = &s
	}
	if _, err := dec.Token(); err != nil {
		return uuid.Nil, fmt.Errorf("input: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return uuid.Nil, errors.New("input: trailing data after the object")
	}
	if handle == nil {
		return uuid.Nil, errors.New(`input: "handle" is required`)
	}
	h, err := uuid.Parse(*handle)
	if err != nil || len(*handle) != 36 {
		return uuid.Nil, fmt.Errorf("input: handle %q is not a process handle", *handle)
	}
	return h, nil
}

// processStatus is the output of both tools.
type processStatus struct {
	Handle        uuid.UUID       `json:"handle"`
	State         string          `json:"state"`
	Mode          string          `json:"mode"`
	Tier          string          `json:"tier"`
	Command       string          `json:"command"`
	RunID         string          `json:"run_id"`
	RequestID     uuid.UUID       `json:"request_id"`
	StartedAt     time.Time       `json:"started_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	StopRequested bool            `json:"stop_requested"`
	EndedAt       *time.Time      `json:"ended_at"`
	EndReason     *string         `json:"end_reason"`
	ExitCode      *int            `json:"exit_code"`
	Signal        *int            `json:"signal"`
	Result        json.RawMessage `json:"result,omitempty"`
	// While it runs under this executor: the output so far, redacted.
	Stdout *string `json:"stdout,omitempty"`
	Stderr *string `json:"stderr,omitempty"`
}

// lookup reads h's row if it belongs to principal's run; an error
// matching ledger.ErrNotFound if it does not.
func (pt *ProcessTool) lookup(ctx context.Context, h uuid.UUID, principal, run string) (processStatus, string, error) {
	p, err := pt.b.cfg.Recorder.Get(ctx, h, principal, run)
	if err != nil {
		return processStatus{}, "", err
	}
	return processStatus{Handle: p.Handle, State: string(p.State), Mode: p.Mode, Tier: p.Tier, Command: p.Command,
		RunID: p.RunID, RequestID: p.RequestID, StartedAt: p.StartedAt, ExpiresAt: p.ExpiresAt,
		StopRequested: p.StopRequestedAt != nil, EndedAt: p.EndedAt, EndReason: p.EndReason, ExitCode: p.ExitCode,
		Signal: p.Signal, Result: p.Result}, p.Owner, nil
}

// live adds the output so far of a process this executor supervises.
func (pt *ProcessTool) live(s *processStatus) {
	pt.b.mu.Lock()
	p := pt.b.procs[s.Handle]
	pt.b.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	r := p.run
	p.mu.Unlock()
	if r == nil {
		return
	}
	r.c.mu.Lock()
	out, errOut := bytes.Clone(r.c.out[0]), bytes.Clone(r.c.out[1])
	r.c.mu.Unlock()
	so, _ := pt.b.t.text(out)
	se, _ := pt.b.t.text(errOut)
	s.Stdout, s.Stderr = &so, &se
}

// Run answers the status of, or stops, the caller's process.
func (pt *ProcessTool) Run(ctx context.Context, call executor.Call) executor.Result {
	h, ok := call.Prepared.(uuid.UUID)
	if !ok {
		v, err := pt.Prepare(ctx, call)
		if err != nil {
			return executor.Refused(err)
		}
		h = v.(uuid.UUID)
	}
	denied := failure(ledger.KindCapabilityDenied, fmt.Sprintf("run %s has no background process with handle %s", call.RunID, h))
	s, owner, err := pt.lookup(ctx, h, call.Principal, call.RunID)
	if errors.Is(err, ledger.ErrNotFound) {
		return denied
	}
	if err != nil {
		return failure(ledger.KindRuntimeFailure, err.Error())
	}
	if pt.stop && s.State == "running" {
		if s, err = pt.stopProcess(ctx, call, h, owner); err != nil {
			if ctx.Err() != nil {
				return failure(ledger.KindCancelled, "cancelled while stopping the process: "+context.Cause(ctx).Error())
			}
			return failure(ledger.KindRuntimeFailure, "stopping the process: "+err.Error())
		}
	}
	if s.State == "running" {
		pt.live(&s)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return failure(ledger.KindRuntimeFailure, err.Error())
	}
	return executor.Result{Output: raw}
}

// stopProcess records the stop request, has the process stopped (by its
// supervisor, here or in another executor; by orphan recovery when that
// executor is gone) and waits for its end to be recorded.
func (pt *ProcessTool) stopProcess(ctx context.Context, call executor.Call, h uuid.UUID, owner string) (processStatus, error) {
	b := pt.b
	s, _, err := pt.lookup(ctx, h, call.Principal, call.RunID)
	if err != nil {
		return processStatus{}, err
	}
	if s.State == "running" && !s.StopRequested {
		// ledger.process_record checks that this executor's login holds
		// this stop request, of the process's principal and run.
		_, err = b.cfg.Recorder.Record(ctx, h, call.RequestID, ledger.NewEvent{Type: "process.stop_requested", Payload: map[string]any{
			"handle": h, "request_id": call.RequestID, "principal": call.Principal, "run_id": call.RunID},
			Metadata: ledger.Metadata{Actor: b.me.String(), CorrelationID: call.RequestID.String()}})
		if err != nil {
			return processStatus{}, err
		}
	}
	if !b.signal(h, errStopRequested) {
		// Another executor's: its poll picks the request up. If that
		// executor is gone, account for the process now.
		if o, err := parseIdentity(owner); err == nil && o.boot == b.me.boot && !alive(o.pid, o.start) {
			b.recoverOrphans(ctx)
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(b.t.cfg.KillGrace + 2*b.cfg.Poll + 10*time.Second)
	for {
		s, _, err := pt.lookup(ctx, h, call.Principal, call.RunID)
		if err != nil || s.State != "running" {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-deadline:
			return s, errors.New("the stop was requested, but the process's executor has not recorded its end yet; ask process.status later")
		case <-tick.C:
		}
	}
}
