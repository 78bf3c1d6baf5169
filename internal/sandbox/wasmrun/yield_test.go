package wasmrun

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/execledger/execledger/ledger"
)

// TestMeteredCallsStopOnTime: with fuel for hours, a metered call still
// ends on its own timeout, the executor's deadline or cancellation, on
// both engines, with the fuel it used recorded — ended by a yield, since
// the runtime does not close modules on context done.
func TestMeteredCallsStopOnTime(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		m := module(t, "acme.loop", wat(t, "loop"))
		m.FuelLimit, m.Timeout = 1<<60, 200*time.Millisecond
		// The same loop with an hour to run: only a cancellation ends it.
		long := module(t, "acme.loop_long", wat(t, "loop"))
		long.FuelLimit, long.Timeout = 1<<60, time.Hour
		h := host(t, Config{Engine: engine, Modules: []Module{m, long}})
		res := run(t, h, "acme.loop", `{}`)
		wantKind(t, res, ledger.KindTimedOut)
		if used := res.Resources["fuel_used"]; !res.TimedOut || res.Resources["wall_ms"] < 200 || used <= 0 || used >= 1<<60 {
			t.Errorf("%s: TimedOut %v after %d ms, fuel used %d", engine, res.TimedOut, res.Resources["wall_ms"], used)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		wantKind(t, runCtx(t, ctx, h, "acme.loop", `{}`), ledger.KindTimedOut)
		cancel()

		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		res = runCtx(t, ctx, h, "acme.loop_long", `{}`)
		// The kind says cancellation ended it, not the module's timeout of
		// an hour; how soon is the benchmarks' business.
		wantKind(t, res, ledger.KindCancelled)
	}
}

// TestStartFunction: a module's start function runs once, before the
// entrypoint, on the call's fuel; one that never returns ends with the
// call's timeout like any other code.
func TestStartFunction(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		set := module(t, "acme.set", wat(t, "start_set"))
		loop := module(t, "acme.startloop", wat(t, "start_loop"))
		loop.FuelLimit, loop.Timeout = 1<<60, 100*time.Millisecond
		h := host(t, Config{Engine: engine, Modules: []Module{set, loop}, AllowInline: true})
		res := run(t, h, "acme.set", `{}`)
		wantOutput(t, res, `{"result": 42}`)
		// [global.get i32.const i32.add global.set end] then [global.get end]
		if res.Resources["fuel_used"] != 7 {
			t.Errorf("%s: fuel used %d, want 7: the start function's 5 and run's 2", engine, res.Resources["fuel_used"])
		}
		wantKind(t, run(t, h, "acme.startloop", `{}`), ledger.KindTimedOut)
		// Not an entrypoint a caller may name.
		wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "start_set"), "__execledger_start", "")),
			ledger.KindInvalidInput, `exports no function "__execledger_start"`)
	}
}

// TestLongCallDoesNotHoldUpTheProcess: wazero's compiled code cannot be
// preempted by the Go runtime, so a call that never left it would hold up
// every stop-the-world pause of the process until it ended. A metered call
// yields every quantum of fuel: a garbage collection completes while one
// runs. (Without yields the collection would wait for the fuel to run
// out, about 60 s at 1.2 ns a unit on an idle machine, longer on a busy
// one: the test fails on the time it took, 30 s at most, not by hanging.
// Here it takes tens to a hundred milliseconds; the 30 s are for a
// machine busy with other work, which slows a call without yields at
// least as much.)
func TestLongCallDoesNotHoldUpTheProcess(t *testing.T) {
	t.Parallel()
	m := module(t, "acme.loop", wat(t, "loop"))
	m.FuelLimit, m.Timeout = 50_000_000_000, time.Hour
	h := host(t, Config{Engine: EngineCompiler, Modules: []Module{m}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantKind(t, runCtx(t, ctx, h, "acme.loop", `{}`), ledger.KindCancelled)
	}()
	for h.running.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // well into the loop
	collected := make(chan time.Duration, 1)
	go func() {
		began := time.Now()
		runtime.GC()
		collected <- time.Since(began)
	}()
	if d := <-collected; d > 30*time.Second {
		t.Errorf("a garbage collection took %v while the call ran", d)
	} else {
		t.Logf("a garbage collection during the call took %v", d)
	}
	cancel()
	<-done
}
