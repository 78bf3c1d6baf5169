package wasmrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/execledger/execledger/executor"
)

// ErrNotReplayable is the error of Replay for a call whose outcome does
// not depend only on the module and its input.
var ErrNotReplayable = errors.New("not replayable")

// Replayed is the outcome of a call run again by Replay.
type Replayed struct {
	// Output is the call's output, byte for byte as the executor records
	// and attests it (the attestation's output subject is its SHA-256).
	Output json.RawMessage
	// FuelUsed is the fuel the call used; Metered is false when the
	// module could not be metered, and FuelUsed is then 0.
	FuelUsed int64
	Metered  bool
	// ModuleDigest is "sha256:<hex>" of the module as registered.
	ModuleDigest string
	// ErrorKind and Error are set when the call failed, as its Result
	// records them.
	ErrorKind, Error string
}

// Replay runs the registered module toolID of cfg once with input, as a
// call of a Host built from cfg would run it: the same checks against the
// pinned digest, bounds, fuel instrumentation and limit, entrypoint, WASI
// configuration, fixed clock and random seed derived from the module's
// and the input's digests. What a call sees besides its input is thus
// the same, and so are its output and fuel.
//
// A module granted any capability is refused with ErrNotReplayable:
// http and storage reach state outside the call, channels' publications
// are recorded events a replay must not repeat, and secrets are values a
// verifier neither holds nor should (a call's output is redacted of the
// secrets it read, so it depends on their values). cfg.Secrets and
// cfg.Storage are ignored, as are plugin.run and the cache directory.
// A call that ends timed_out or cancelled depended on the wall clock; its
// replay is reported, not refused: the caller compares the outcome.
func Replay(ctx context.Context, cfg Config, toolID string, input json.RawMessage) (Replayed, error) {
	m, ok := moduleOf(cfg, toolID)
	if !ok {
		return Replayed{}, fmt.Errorf("wasmrun: replay: no module is registered as %q", toolID)
	}
	if caps := grantedNames(grant(cfg.Policy, m.Capabilities)); caps != "" {
		return Replayed{}, fmt.Errorf("wasmrun: replay: %s: %w: it is granted %s", toolID, ErrNotReplayable, caps)
	}
	cfg.Modules, cfg.AllowInline, cfg.CacheDir = []Module{m}, false, ""
	cfg.Secrets, cfg.Storage, cfg.MaxInstances = nil, nil, 1
	h, err := New(ctx, cfg)
	if err != nil {
		return Replayed{}, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	t := h.Tool(toolID)
	res := t.Run(ctx, executor.Call{Input: input})
	if len(res.Events) > 0 { // granted nothing, so it cannot happen
		return Replayed{}, fmt.Errorf("wasmrun: replay: %s: %w: the call recorded events", toolID, ErrNotReplayable)
	}
	r := Replayed{Output: res.Output, ErrorKind: string(res.ErrorKind), Error: res.Error, ModuleDigest: t.prog.digest}
	if len(r.Output) > 0 {
		// As the executor stores and attests it (executor.StoredOutput).
		if r.Output, err = executor.StoredOutput(r.Output); err != nil {
			return Replayed{}, fmt.Errorf("wasmrun: replay: %s: output: %w", toolID, err)
		}
	}
	r.FuelUsed, r.Metered = res.Resources["fuel_used"]
	return r, nil
}

// moduleOf returns cfg's module registered as toolID.
func moduleOf(cfg Config, toolID string) (Module, bool) {
	for _, m := range cfg.Modules {
		if m.ToolID == toolID {
			return m, true
		}
	}
	return Module{}, false
}

// grantedNames lists c's classes that name anything, e.g. "http, secret";
// "" when c grants nothing.
func grantedNames(c Capabilities) string {
	var out []string
	for _, class := range classes {
		if len(c.list(class)) > 0 {
			out = append(out, class+" "+strings.Join(c.list(class), " "))
		}
	}
	return strings.Join(out, ", ")
}
