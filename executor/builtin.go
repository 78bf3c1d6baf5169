package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/execledger/execledger/ledger"
)

// decodeStrict decodes a JSON object into v, refusing unknown fields and
// trailing data.
func decodeStrict(input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the input object")
	}
	return nil
}

// Echo returns its input text: {"text": "..."} -> {"text": "..."}. It is
// the cheapest tool, for tests, probes and benchmarks.
type Echo struct{}

// EchoMaxText is the longest text echo accepts, in characters.
const EchoMaxText = 4096

type echoInput struct {
	Text *string `json:"text"`
}

func (Echo) Name() string       { return "echo" }
func (Echo) Executor() string   { return "builtin" }
func (Echo) Tier() string       { return "builtin" }
func (Echo) SafeToRepeat() bool { return true }

// RunsInline: echo's calls run in the claim's transaction (InlineTool).
func (Echo) RunsInline() bool { return true }

// Prepare parses the input strictly; Run gets the text.
func (Echo) Prepare(_ context.Context, call Call) (any, error) {
	var in echoInput
	if err := decodeStrict(call.Input, &in); err != nil {
		return nil, fmt.Errorf("echo: %w", err)
	}
	if in.Text == nil {
		return nil, errors.New(`echo: input needs "text"`)
	}
	if n := utf8.RuneCountInString(*in.Text); n > EchoMaxText {
		return nil, fmt.Errorf("echo: text is %d characters, the limit is %d", n, EchoMaxText)
	}
	return *in.Text, nil
}

func (e Echo) Run(_ context.Context, call Call) Result {
	if call.Prepared == nil {
		p, err := e.Prepare(context.Background(), call)
		if err != nil {
			return Refused(err)
		}
		call.Prepared = p
	}
	text := call.Prepared.(string)
	out, _ := json.Marshal(map[string]string{"text": text})
	return Result{Output: out}
}

// Sleep waits: {"ms": N} with 0 <= N <= 30000. It stops early when
// cancelled or timed out.
type Sleep struct{}

// SleepMax is the longest sleep.
const SleepMax = 30 * time.Second

type sleepInput struct {
	MS *int64 `json:"ms"`
}

func (Sleep) Name() string       { return "sleep" }
func (Sleep) Executor() string   { return "builtin" }
func (Sleep) Tier() string       { return "builtin" }
func (Sleep) SafeToRepeat() bool { return true }

// Prepare parses the input strictly; Run gets the duration.
func (Sleep) Prepare(_ context.Context, call Call) (any, error) {
	var in sleepInput
	if err := decodeStrict(call.Input, &in); err != nil {
		return nil, fmt.Errorf("sleep: %w", err)
	}
	if in.MS == nil {
		return nil, errors.New(`sleep: input needs "ms"`)
	}
	if *in.MS < 0 || time.Duration(*in.MS)*time.Millisecond > SleepMax {
		return nil, fmt.Errorf("sleep: ms must be between 0 and %d, got %d", SleepMax.Milliseconds(), *in.MS)
	}
	return time.Duration(*in.MS) * time.Millisecond, nil
}

func (s Sleep) Run(ctx context.Context, call Call) Result {
	if call.Prepared == nil {
		p, err := s.Prepare(ctx, call)
		if err != nil {
			return Refused(err)
		}
		call.Prepared = p
	}
	d := call.Prepared.(time.Duration)
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		out, _ := json.Marshal(map[string]int64{"slept_ms": time.Since(start).Milliseconds()})
		return Result{Output: out}
	case <-ctx.Done():
		return interrupted(ctx, "sleep")
	}
}

// interrupted is the Result of a call stopped by its context: a timeout,
// a cancellation or the executor shutting down.
func interrupted(ctx context.Context, tool string) Result {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errCancelled):
		return failure(ledger.KindCancelled, tool+": cancelled")
	case errors.Is(cause, errShutdown):
		return failure(ledger.KindCancelled, tool+": stopped: the executor shut down")
	case errors.Is(cause, errLeaseLost):
		return failure(ledger.KindRuntimeFailure, tool+": stopped: the executor lost its lease")
	default:
		return Result{ErrorKind: ledger.KindTimedOut, Error: tool + ": timed out", TimedOut: true}
	}
}
