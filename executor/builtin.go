package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
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

func (Echo) Validate(input json.RawMessage) error {
	var in echoInput
	if err := decodeStrict(input, &in); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if in.Text == nil {
		return errors.New(`echo: input needs "text"`)
	}
	if n := utf8.RuneCountInString(*in.Text); n > EchoMaxText {
		return fmt.Errorf("echo: text is %d characters, the limit is %d", n, EchoMaxText)
	}
	return nil
}

func (e Echo) Run(_ context.Context, call Call) Result {
	var in echoInput
	if err := decodeStrict(call.Input, &in); err != nil || in.Text == nil {
		return failure("invalid_input", "echo: invalid input")
	}
	out, _ := json.Marshal(map[string]string{"text": *in.Text})
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

func (Sleep) Validate(input json.RawMessage) error {
	var in sleepInput
	if err := decodeStrict(input, &in); err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	if in.MS == nil {
		return errors.New(`sleep: input needs "ms"`)
	}
	if *in.MS < 0 || time.Duration(*in.MS)*time.Millisecond > SleepMax {
		return fmt.Errorf("sleep: ms must be between 0 and %d, got %d", SleepMax.Milliseconds(), *in.MS)
	}
	return nil
}

func (Sleep) Run(ctx context.Context, call Call) Result {
	var in sleepInput
	if err := decodeStrict(call.Input, &in); err != nil || in.MS == nil {
		return failure("invalid_input", "sleep: invalid input")
	}
	start := time.Now()
	t := time.NewTimer(time.Duration(*in.MS) * time.Millisecond)
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
		return failure("cancelled", tool+": cancelled")
	case errors.Is(cause, errShutdown):
		return failure("cancelled", tool+": stopped: the executor shut down")
	case errors.Is(cause, errLeaseLost):
		return failure("runtime_failure", tool+": stopped: the executor lost its lease")
	default:
		return Result{ErrorKind: "timed_out", Error: tool + ": timed out", TimedOut: true}
	}
}
