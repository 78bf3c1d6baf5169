package wasmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/wasm/meter"

	"github.com/execledger/execledger/ledger"
)

// callState is what a call allocates, in one piece.
type callState struct {
	mem            memoryCap
	caps           callCaps
	stdin          bytes.Reader
	stdout, stderr limitedBuffer
}

// execute runs entry e of p in a fresh instance with input, and closes the
// instance. The call ends by deadline (or ctx's, if earlier): a module
// that yields (fuelMeter.yields) checks it at every yield, as does every
// host function (callCaps.enter), so it costs no timer; with a meter that
// does not yield, a context with the deadline closes the module instead.
func (t *Tool) execute(ctx context.Context, deadline time.Time, p *program, e entry, input []byte) executor.Result {
	cfg := &t.h.cfg
	began := time.Now()
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if !t.run.meter.yields() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, errTimeout)
		defer cancel()
	}
	pages := t.memoryPages()
	st := &callState{mem: memoryCap{limit: uint64(pages) * pageSize},
		caps: callCaps{granted: t.granted, secrets: cfg.Secrets, storage: cfg.Storage, http: cfg.HTTP, deadline: deadline,
			meter: t.run.meter, wasi: t.wasi},
		stdout: limitedBuffer{limit: cfg.OutputLimit}, stderr: limitedBuffer{limit: cfg.StderrLimit}}
	st.stdin.Reset(input)
	mem, cc := &st.mem, &st.caps
	std := stdio{stdin: &st.stdin, stdout: &st.stdout, stderr: &st.stderr}
	o := outcome{metered: t.run.meter.metered(), memLimit: pages, fuelLimit: t.fuel}
	ctx = withCallCaps(ctx, cc)

	mc := t.sealed
	if p.wasi {
		mc = callConfig(t.mc, p.digest, input, std)
	}
	mod, err := t.run.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), p.compiled, mc)
	var results []uint64
	var fuelErr error
	if err != nil {
		o.err, o.instantiate = err, true
	} else {
		if fuelErr = t.run.startFloor(mod, t.fuel); fuelErr == nil {
			results, o.err = call(ctx, mod, e)
			o.fuelLeft, fuelErr = t.run.meter.left(mod)
		}
		mod.Close(context.WithoutCancel(ctx))
	}
	o.memRefused, o.stopped = mem.Refused(), cc.stopped

	enf := t.callEnf
	if p != t.prog || e != t.entry { // plugin.run
		enf = t.callEnforcement(p, e)
	}
	res := executor.Result{Enforcement: enf, Resources: map[string]int64{
		"wall_ms":           time.Since(began).Milliseconds(),
		"memory_pages_peak": mem.PeakPages(),
		"module_bytes":      int64(p.size),
		"output_bytes":      std.stdout.total,
	}}
	red := cc.redactor(cfg.Redactor)
	res.Events = cc.events(red)
	if o.metered {
		res.Resources["fuel_limit"] = t.fuel
		if !o.instantiate { // else unknown: the start function may have used some
			res.Resources["fuel_used"] = t.fuel - max(o.fuelLeft, 0)
		}
	}
	if fuelErr != nil {
		return t.failure(res, refuse(ledger.KindRuntimeFailure, "the fuel meter: %v", fuelErr), o, std, red)
	}
	if o.err != nil {
		return t.failure(res, classify(ctx, o), o, std, red)
	}
	if cc.done(ctx) { // finished, but only after it was told to stop
		return t.failure(res, interrupted(ctx), o, std, red)
	}
	out, cerr := t.output(e, results, std, red)
	if cerr != nil {
		return t.failure(res, cerr, o, std, red)
	}
	res.Output = out
	res.StorageWrites = cc.storageWrites()
	return res
}

// call runs the entrypoint, after the module's start function and, for a
// WASI reactor, _initialize. A WASI command's exit with code 0 is a
// success.
func call(ctx context.Context, mod api.Module, e entry) ([]uint64, error) {
	if e.start {
		if _, err := mod.ExportedFunction(meter.StartExport).Call(ctx); err != nil {
			return nil, err
		}
	}
	if e.initialize {
		if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
			return nil, err
		}
	}
	results, err := mod.ExportedFunction(e.name).Call(ctx)
	if exit, ok := err.(*sys.ExitError); ok && exit.ExitCode() == 0 && ctx.Err() == nil {
		return results, nil
	}
	return results, err
}

// output builds a successful call's output: {"result": N}, or the JSON
// object a WASI command wrote to stdout, redacted.
func (t *Tool) output(e entry, results []uint64, std stdio, red callRedactor) (json.RawMessage, *callError) {
	if e.abi == abiResult {
		if len(results) == 0 { // proc_exit(0) instead of a return
			return nil, refuse(ledger.KindRuntimeFailure, "the module exited without returning a result")
		}
		n := int64(int32(uint32(results[0])))
		if e.i64 {
			n = int64(results[0])
		}
		return json.RawMessage(`{"result":` + strconv.FormatInt(n, 10) + `}`), nil
	}
	if std.stdout.Truncated() {
		return nil, refuse(ledger.KindQuotaExceeded, "output is %d bytes; the limit is %d", std.stdout.total, t.h.cfg.OutputLimit)
	}
	b := bytes.TrimSpace(std.stdout.buf.Bytes())
	if !isObject(b) {
		return nil, refuse(ledger.KindRuntimeFailure, "output is not a JSON object: %q", clip(red.String(string(b)), 200))
	}
	return red.JSON(b), nil
}

// failure completes res for a failed call: the error, and as output what
// the module wrote to stderr (redacted, bounded) and its exit code or
// trap.
func (t *Tool) failure(res executor.Result, ce *callError, o outcome, std stdio, red callRedactor) executor.Result {
	res.ErrorKind, res.TimedOut = ce.kind, ce.kind == ledger.KindTimedOut
	res.Error = t.name + ": " + ce.msg
	out := map[string]any{}
	if std.stderr.total > 0 {
		s := std.stderr.buf.String()
		if std.stderr.Truncated() {
			s = red.cut(s)
		}
		s = red.String(strings.ToValidUTF8(s, "\uFFFD"))
		out["stderr"], out["stderr_truncated"] = s, std.stderr.Truncated()
		res.Error += "; stderr: " + clip(s, 512)
	}
	if exit, ok := o.err.(*sys.ExitError); ok && ce.kind == ledger.KindRuntimeFailure {
		out["exit_code"] = exit.ExitCode()
	} else if o.err != nil && ce.kind == ledger.KindRuntimeFailure {
		out["trap"] = clip(o.err.Error(), 4096)
	}
	if len(out) > 0 {
		res.Output, _ = json.Marshal(out)
	}
	return res
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
