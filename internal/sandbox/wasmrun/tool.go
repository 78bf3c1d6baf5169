package wasmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/execledger/execledger/executor"

	"github.com/execledger/execledger/ledger"
)

// Tool runs WebAssembly modules in tier A: a registered skill's module,
// or (plugin.run) the module a call sends. It is safe for concurrent use.
type Tool struct {
	h       *Host
	name    string
	run     *runner
	fuel    int64
	timeout time.Duration
	enf     map[string]any // what every call records
	callEnf map[string]any // enf and the registered module's: every call's, shared
	granted Capabilities   // what every call may use
	mc      wazero.ModuleConfig
	sealed  wazero.ModuleConfig // mc for modules that import no WASI
	wasi    wasiSizes           // of mc's args and environment

	// A registered module:
	mod   Module
	prog  *program
	entry entry

	// plugin.run:
	cache *moduleCache
}

var _ executor.Tool = (*Tool)(nil)

// Name is the skill's tool id, or plugin.run.
func (t *Tool) Name() string { return t.name }

// Executor is "sandbox_tier_a".
func (t *Tool) Executor() string { return "sandbox_tier_a" }

// Tier is "A".
func (t *Tool) Tier() string { return "A" }

// SafeToRepeat is true unless the tool is granted http hosts: a module
// sees nothing of the host but its input, a deterministic clock, a seeded
// random source, the secrets it is granted and the storage as it was, and
// what it publishes on channels and writes to storage is recorded with
// its result, in the outcome's transaction, so running a call twice does
// no harm. An http request reaches the world at once.
func (t *Tool) SafeToRepeat() bool {
	return len(t.granted.HTTPHosts) == 0
}

// Engine is the wazero engine the tool's runtime uses: "compiler" or
// "interpreter".
func (t *Tool) Engine() string { return t.run.engine }

// prepared is what Prepare hands Run: plugin.run's parsed input.
type prepared struct{ plugin *plugin }

// Prepare checks the input: a JSON object for a registered skill;
// plugin.run's object (see parsePlugin) otherwise, which Run gets parsed.
func (t *Tool) Prepare(_ context.Context, call executor.Call) (any, error) {
	p, ce := t.prepare(call.Input)
	if ce != nil {
		return nil, &executor.Refusal{Kind: ce.kind, Message: t.name + ": " + ce.msg}
	}
	return p, nil
}

func (t *Tool) prepare(input json.RawMessage) (prepared, *callError) {
	if t.cache != nil {
		in, err := t.parsePlugin(input)
		if err != nil {
			return prepared{}, refuse(ledger.KindInvalidInput, "%v", err)
		}
		return prepared{plugin: in}, nil
	}
	if !isObject(input) {
		return prepared{}, refuse(ledger.KindInvalidInput, "input is not a JSON object")
	}
	return prepared{}, nil
}

// Run runs one call in a fresh instance, closed after it. It waits for an
// instance slot until ctx ends; then the call's timeout starts. The
// timeout is not a context of its own: a yield of the running module, or
// a host function, checks it (see execute).
func (t *Tool) Run(ctx context.Context, call executor.Call) executor.Result {
	p, ok := call.Prepared.(prepared)
	if !ok {
		var ce *callError
		if p, ce = t.prepare(call.Input); ce != nil {
			return t.failed(ce, nil)
		}
	}
	if t.cache != nil {
		return t.runPlugin(ctx, p.plugin)
	}
	if err := t.h.acquire(ctx); err != nil {
		return t.failed(err, nil)
	}
	defer t.h.release()
	return t.execute(ctx, time.Now().Add(t.timeout), t.prog, t.entry, call.Input)
}

// runPlugin runs plugin.run: the module is compiled (or found in the
// cache) while the call holds its slot, within its timeout.
func (t *Tool) runPlugin(ctx context.Context, in *plugin) executor.Result {
	enf := map[string]any{"module_digest": in.digest}
	if err := t.h.acquire(ctx); err != nil {
		return t.failed(err, enf)
	}
	defer t.h.release()
	ctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errTimeout)
	defer cancel()
	p, done, err := t.cache.get(ctx, in.digest, func() (*program, error) {
		// Not ended by this call's context: other calls may wait for it.
		return t.run.compile(context.WithoutCancel(ctx), in.module, in.digest, t.fuel)
	})
	if err != nil {
		return t.failed(err, enf)
	}
	defer done()
	e, err := p.entry(in.entrypoint)
	if err != nil {
		return t.failed(err, enf)
	}
	deadline, _ := ctx.Deadline()
	return t.execute(ctx, deadline, p, e, in.input)
}

// failed is a Result for a call refused before its module ran.
func (t *Tool) failed(err error, enf map[string]any) executor.Result {
	var ce *callError
	if !errors.As(err, &ce) {
		ce = refuse(ledger.KindRuntimeFailure, "%v", err)
	}
	res := executor.Result{ErrorKind: ce.kind, Error: t.name + ": " + ce.msg, TimedOut: ce.kind == ledger.KindTimedOut,
		Enforcement: maps.Clone(t.enf)}
	maps.Copy(res.Enforcement, enf)
	return res
}

// callEnforcement is what a call of entry e of p records: the tool's
// enforcement and the module's.
func (t *Tool) callEnforcement(p *program, e entry) map[string]any {
	enf := make(map[string]any, len(t.enf)+5)
	maps.Copy(enf, t.enf)
	enf["module_digest"] = p.digest
	enf["entrypoint"] = e.name
	enf["abi"] = e.abi
	enf["host_modules"] = p.hosts
	if t.run.meter.metered() {
		enf["instrumented_digest"] = p.instDigest
	}
	return enf
}

// baseEnforcement is what every call of t records.
func (t *Tool) baseEnforcement() map[string]any {
	cfg := t.h.cfg
	env := slices.Sorted(maps.Keys(t.mod.Env))
	if env == nil {
		env = []string{}
	}
	enf := map[string]any{
		"engine":             t.run.engine,
		"memory_limit_pages": t.memoryPages(),
		"table_limit":        cfg.TableLimit,
		"max_instances":      cfg.MaxInstances,
		"max_module_bytes":   cfg.MaxModuleBytes,
		"output_limit_bytes": cfg.OutputLimit,
		"timeout_ms":         t.timeout.Milliseconds(),
		"capabilities":       t.granted.enforcement(),
		"wasi": map[string]any{
			"preopens": "none", "network": "none", "clock": "fixed", "random": "seeded",
			"env": env, "args": []string{t.name},
		},
	}
	if t.run.meter.metered() {
		enf["fuel_limit"] = t.fuel
		enf["host_call_fuel"] = map[string]int64{"call": HostCallFuel, "byte": HostByteFuel}
	} else {
		enf["fuel_limit"] = 0
		enf["fuel"] = "unmetered: only the timeout bounds the call"
	}
	if t.prog != nil {
		enf["module_digest"] = t.prog.digest
		enf["entrypoint"] = t.entry.name
		enf["abi"] = t.entry.abi
	}
	return enf
}

// isObject reports whether b is one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
