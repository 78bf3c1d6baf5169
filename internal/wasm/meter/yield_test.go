package meter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// yielder is the host's yield for tests: it counts its calls, moves the
// floor quantum below the fuel, and from call stopAt on (if not 0), or
// once stop is set, returns 1 to end the call.
type yielder struct {
	quantum int64
	stopAt  int64
	stop    atomic.Bool
	calls   atomic.Int64
}

func (y *yielder) yield(_ context.Context, mod api.Module) uint32 {
	n := y.calls.Add(1)
	if y.stop.Load() || y.stopAt != 0 && n >= y.stopAt {
		return 1
	}
	if err := y.setFloor(mod); err != nil {
		panic(err) // the call fails with it
	}
	return 0
}

// setFloor sets the floor of mod quantum below its fuel.
func (y *yielder) setFloor(mod api.Module) error {
	fuel, err := Fuel(mod)
	if err != nil {
		return err
	}
	return SetFloor(mod, max(0, fuel-y.quantum))
}

// instantiateYield instantiates in rt the host module that provides yield.
func instantiateYield(t testing.TB, rt wazero.Runtime, y *yielder) {
	t.Helper()
	_, err := rt.NewHostModuleBuilder(YieldModule).
		NewFunctionBuilder().WithFunc(y.yield).Export(YieldName).
		Instantiate(context.Background())
	if err != nil {
		t.Fatalf("instantiate %s: %v", YieldModule, err)
	}
}

// instantiateEnv instantiates in rt the host module "env" that
// testdata/renumber.wat imports.
func instantiateEnv(t testing.TB, rt wazero.Runtime) {
	t.Helper()
	_, err := rt.NewHostModuleBuilder("env").
		NewFunctionBuilder().WithFunc(func(x uint32) uint32 { return x + 1 }).Export("add1").
		NewFunctionBuilder().WithFunc(func(x uint32) uint32 { return 2 * x }).Export("twice").
		Instantiate(context.Background())
	if err != nil {
		t.Fatalf("instantiate env: %v", err)
	}
}

// instantiateWith instantiates wasm on a fresh runtime of engine e, with
// tail calls enabled, closed when the test ends, after the host modules:
// yield if y is not nil, and env if withEnv.
func instantiateWith(t testing.TB, e engine, wasm []byte, y *yielder, withEnv bool) api.Module {
	t.Helper()
	ctx := context.Background()
	cfg := e.config().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { rt.Close(context.WithoutCancel(ctx)) })
	if y != nil {
		instantiateYield(t, rt, y)
	}
	if withEnv {
		instantiateEnv(t, rt)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatalf("%s: instantiate: %v", e.name, err)
	}
	return mod
}

// runYield is run for a module instrumented with Yield: the floor starts
// y.quantum below the fuel.
func runYield(t testing.TB, mod api.Module, y *yielder, fuel int64, fn string, args ...uint64) ([]uint64, int64, error) {
	t.Helper()
	if err := SetFuel(mod, fuel); err != nil {
		t.Fatal(err)
	}
	if err := y.setFloor(mod); err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction(fn).Call(context.Background(), args...)
	left, ferr := Fuel(mod)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return res, fuel - left, err
}

// TestYieldUsesTheSameFuel runs the corpus instrumented with and without
// Yield, the host yielding 7 units of fuel after the last yield: results,
// traps and fuel are the same, and yield was called.
func TestYieldUsesTheSameFuel(t *testing.T) {
	t.Parallel()
	for name, script := range corpus() {
		src := compileWAT(t, name)
		plainWasm := mustInstrument(t, src, Options{InitialFuel: 1000})
		yieldWasm := mustInstrument(t, src, Options{InitialFuel: 1000, Yield: true})
		for _, e := range engines() {
			y := &yielder{quantum: 7}
			plain := instantiate(t, e, plainWasm)
			yielding := instantiateWith(t, e, yieldWasm, y, false)
			for i, s := range script {
				wantRes, wantUsed, werr := run(t, plain, 1<<40, s.fn, s.args...)
				before := y.calls.Load()
				res, used, err := runYield(t, yielding, y, 1<<40, s.fn, s.args...)
				want, got := outcome{wantRes, werr != nil, wantUsed}, outcome{res, err != nil, used}
				if want.String() != got.String() {
					t.Errorf("%s %s step %d %s%v: without Yield %v (%v), with Yield %v (%v)",
						e.name, name, i, s.fn, s.args, want, werr, got, err)
				}
				// Only the checks at function entries and loop heads
				// yield: the first one 7 below where the call started
				// does. In count's loop, whose turn costs 9, one in every
				// 7 + 9 units of fuel does; in a call that recurses or
				// loops for long, some do.
				calls := y.calls.Load() - before
				long := used > 100 && (name == "fib" || name == "recurse" || name == "sort")
				if long && calls == 0 || name == "loop" && calls < used/(7+9) {
					t.Errorf("%s %s step %d: yield called %d times in %d fuel", e.name, name, i, calls, used)
				}
			}
			if name != "start" && y.calls.Load() == 0 {
				t.Errorf("%s %s: yield never called", e.name, name)
			}
		}
	}
}

// TestYieldEndsACall: yield returning non-zero ends a call that would run
// on for ever, with the unreachable trap and fuel left; with the floor at
// 0 yield is never called and running out of fuel is as without Yield.
func TestYieldEndsACall(t *testing.T) {
	t.Parallel()
	wasm := mustInstrument(t, compileWAT(t, "loop"), Options{Yield: true})
	for _, e := range engines() {
		y := &yielder{quantum: 100, stopAt: 1000}
		mod := instantiateWith(t, e, wasm, y, false)
		const fuel = 1 << 62
		_, used, err := runYield(t, mod, y, fuel, "spin")
		if err == nil || !strings.Contains(err.Error(), "unreachable") || used > fuel || used < 999*100 {
			t.Errorf("%s: spin stopped by yield: used %d, %v; want the unreachable trap with fuel left", e.name, used, err)
		}
		if n := y.calls.Load(); n != 1000 {
			t.Errorf("%s: yield called %d times, want 1000", e.name, n)
		}
		const little = 1000
		if err := SetFloor(mod, 0); err != nil {
			t.Fatal(err)
		}
		_, used, err = run(t, mod, little, "spin")
		if !isOutOfFuel(err, used, little) || used != little+1 {
			t.Errorf("%s: spin with %d fuel and floor 0: used %d, %v; want out of fuel at -1", e.name, little, used, err)
		}
		if n := y.calls.Load(); n != 1000 {
			t.Errorf("%s: yield called with floor 0 (%d calls)", e.name, n)
		}
	}
}

// TestYieldCancelsAndPreempts: a yield that checks the call's context
// ends a loop when the context times out, and, being Go code, lets the
// garbage collector stop the world while the loop runs.
func TestYieldCancelsAndPreempts(t *testing.T) {
	t.Parallel()
	wasm := mustInstrument(t, compileWAT(t, "loop"), Options{Yield: true})
	for _, e := range engines() {
		y := &yielder{quantum: 10_000}
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, e.config())
		defer rt.Close(ctx)
		_, err := rt.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().
			WithFunc(func(ctx context.Context, mod api.Module) uint32 {
				if ctx.Err() != nil {
					return 1
				}
				return y.yield(ctx, mod)
			}).Export(YieldName).Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mod, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		if err := SetFuel(mod, 1<<62); err != nil {
			t.Fatal(err)
		}
		if err := y.setFloor(mod); err != nil {
			t.Fatal(err)
		}
		callCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			_, err := mod.ExportedFunction("spin").Call(callCtx)
			done <- err
		}()
		// Wait for the loop to yield once; a call that ends before it
		// does is a failure, not a wait without end.
		var early error
		for y.calls.Load() == 0 && early == nil {
			select {
			case err := <-done:
				early = fmt.Errorf("spin ended before it yielded: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
		if early != nil {
			cancel()
			t.Fatalf("%s: %v", e.name, early)
		}
		gc := make(chan struct{})
		go func() { runtime.GC(); close(gc) }()
		select {
		case <-gc:
		case <-time.After(2 * time.Minute): // without yields: never
			t.Errorf("%s: the garbage collector could not stop the world in 2 minutes", e.name)
		}
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Errorf("%s: spin ended with %v, want the unreachable trap", e.name, err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: spin still running 2 minutes after its deadline", e.name)
		}
		cancel()
		if left, _ := Fuel(mod); left < 0 {
			t.Errorf("%s: a cancelled call left fuel %d", e.name, left)
		}
	}
}

// renumberScript lists calls of testdata/renumber.wat's exports.
func renumberScript() []step {
	a := func(v ...uint64) []uint64 { return v }
	var s []step
	s = append(s, steps("started", nil)...)
	s = append(s, steps("chain", a(5))...)
	s = append(s, steps("tail", a(9))...)
	s = append(s, steps("tail_import", a(9))...)
	s = append(s, steps("table", a(0, 7), a(1, 7), a(2, 7), a(3, 7), a(4, 7), a(5, 7))...)
	s = append(s, steps("table2", a(4, 7), a(5, 7), a(6, 7), a(7, 7), a(8, 7))...)
	s = append(s, steps("passive", a(6))...)
	s = append(s, steps("refs", a(3))...)
	return append(s, steps("boom", a(1))...)
}

// TestYieldRenumbersFunctions instruments a module that names functions in
// every way the format allows: with Yield, its exports give the same
// results as the original's, and the name section still names them.
func TestYieldRenumbersFunctions(t *testing.T) {
	t.Parallel()
	src := compileWAT(t, "renumber")
	wasm := mustInstrument(t, src, Options{InitialFuel: 100, Yield: true})
	for _, e := range engines() {
		y := &yielder{quantum: 1}
		orig := instantiateWith(t, e, src, nil, true)
		mod := instantiateWith(t, e, wasm, y, true)
		for i, s := range renumberScript() {
			want, werr := orig.ExportedFunction(s.fn).Call(context.Background(), s.args...)
			res, _, err := runYield(t, mod, y, 1<<40, s.fn, s.args...)
			if fmt.Sprint(want) != fmt.Sprint(res) || fmt.Sprint(werr) != fmt.Sprint(err) {
				t.Errorf("%s step %d %s%v: original %v (%v), with Yield %v (%v)", e.name, i, s.fn, s.args, want, werr, res, err)
			}
		}
		if y.calls.Load() == 0 {
			t.Errorf("%s: yield never called", e.name)
		}
		wantDefs, defs := orig.ExportedFunctionDefinitions(), mod.ExportedFunctionDefinitions()
		for name, want := range wantDefs {
			got := defs[name]
			if got.Name() != want.Name() || fmt.Sprint(got.ParamNames()) != fmt.Sprint(want.ParamNames()) {
				t.Errorf("%s: export %s is %s%v, want %s%v", e.name, name, got.Name(), got.ParamNames(), want.Name(), want.ParamNames())
			}
		}
	}
	// The backtrace of boom's trap names its functions and their
	// parameters from the name section; "boom" and "crash" must be there.
	_, err := instantiateWith(t, engines()[1], wasm, &yielder{}, true).ExportedFunction("boom").Call(context.Background(), 1)
	if err == nil || !strings.Contains(err.Error(), ".crash(") {
		t.Errorf("boom: %v; want a backtrace through crash", err)
	}
}

// TestYieldWithDeferStart: the exported start function is the module's
// own, renumbered, and runs with the host's floor, so it can yield.
func TestYieldWithDeferStart(t *testing.T) {
	t.Parallel()
	src := compileWAT(t, "renumber")
	wasm := mustInstrument(t, src, Options{DeferStart: true, Yield: true})
	for _, e := range engines() {
		y := &yielder{quantum: 1}
		mod := instantiateWith(t, e, wasm, y, true)
		if res, _, err := runYield(t, mod, y, 100, "started"); err != nil || fmt.Sprint(res) != "[0]" {
			t.Errorf("%s: started before the start function = %v, %v", e.name, res, err)
		}
		if got := mod.ExportedFunctionDefinitions()[StartExport]; got == nil || got.Name() != "init" {
			t.Fatalf("%s: %s is %v, want the function named init", e.name, StartExport, got)
		}
		if _, used, err := runYield(t, mod, y, 100, StartExport); err != nil || used != 4 {
			t.Errorf("%s: start: used %d, %v; want 4", e.name, used, err)
		}
		if y.calls.Load() == 0 {
			t.Errorf("%s: the start function did not yield", e.name)
		}
		if res, _, _ := runYield(t, mod, y, 100, "started"); fmt.Sprint(res) != "[42]" {
			t.Errorf("%s: started after the start function = %v, want 42", e.name, res)
		}
	}
}

// TestYieldRenumbersTheStartSection: without DeferStart the start section
// names the same function once renumbered, and a malformed name section
// is dropped rather than left naming the wrong functions.
func TestYieldRenumbersTheStartSection(t *testing.T) {
	t.Parallel()
	src := compileWAT(t, "renumber")
	for _, e := range engines() {
		mod := instantiateWith(t, e, mustInstrument(t, src, Options{InitialFuel: 100, Yield: true}), &yielder{}, true)
		if res, _ := mustRun(t, mod, 100, "started"); fmt.Sprint(res) != "[42]" {
			t.Errorf("%s: started = %v, want 42: the start section calls another function", e.name, res)
		}
	}
	badNames := assemble(
		sec{secType, vecOf([]byte{0x60, 0x00, 0x00})},
		sec{secFunction, vecOf([]byte{0x00})},
		sec{secCode, vecOf(funcBody(0x0b))},
		sec{secCustom, cat(nameOf("name"), []byte{0x01, 0x05, 0x01, 0x00})}, // size past the end
	)
	out := mustInstrument(t, badNames, Options{Yield: true})
	ss, _ := sections(t, out)
	for _, s := range ss {
		if s.id == secCustom {
			t.Errorf("malformed name section kept: %x", s.data)
		}
	}
}

func TestSetFloor(t *testing.T) {
	t.Parallel()
	e := engines()[1]
	plain := instantiate(t, e, mustInstrument(t, compileWAT(t, "loop"), Options{}))
	if err := SetFloor(plain, 10); !errors.Is(err, ErrNoYield) {
		t.Errorf("SetFloor on a module instrumented without Yield: %v, want ErrNoYield", err)
	}
	mod := instantiateWith(t, e, mustInstrument(t, compileWAT(t, "loop"), Options{Yield: true}), &yielder{}, false)
	if err := SetFloor(mod, -1); err == nil {
		t.Error("SetFloor accepted a negative floor")
	}
	if err := SetFloor(mod, 5); err != nil {
		t.Errorf("SetFloor(5): %v", err)
	}
	if g := mod.ExportedGlobal(FloorExport); g == nil || int64(g.Get()) != 5 {
		t.Errorf("floor global after SetFloor(5): %v", g)
	}
}

// TestDeferStart: the start function becomes an export that
// instantiation does not run; calling it does what the start section did,
// on the initial fuel. A module without a start function gets no export.
func TestDeferStart(t *testing.T) {
	t.Parallel()
	src := compileWAT(t, "start")
	for _, e := range engines() {
		mod := instantiate(t, e, mustInstrument(t, src, Options{InitialFuel: 10, DeferStart: true}))
		if left, _ := Fuel(mod); left != 10 {
			t.Errorf("%s: fuel after instantiation %d, want 10: the start function ran", e.name, left)
		}
		get := mod.ExportedFunction("get")
		if res, err := get.Call(context.Background()); err != nil || res[0] != 0 {
			t.Errorf("%s: get before start = %v, %v; want 0", e.name, res, err)
		}
		start := mod.ExportedFunction(StartExport)
		if start == nil {
			t.Fatalf("%s: no %s export", e.name, StartExport)
		}
		before, _ := Fuel(mod) // get used some
		if _, err := start.Call(context.Background()); err != nil {
			t.Fatalf("%s: start: %v", e.name, err)
		}
		if left, _ := Fuel(mod); before-left != 3 {
			t.Errorf("%s: start used %d fuel, want 3 as when instantiation runs it", e.name, before-left)
		}
		if res, _ := mustRun(t, mod, 10, "get"); res[0] != 42 {
			t.Errorf("%s: get after start = %v", e.name, res)
		}
		none := instantiate(t, e, mustInstrument(t, compileWAT(t, "loop"), Options{DeferStart: true}))
		if _, ok := none.ExportedFunctionDefinitions()[StartExport]; ok {
			t.Errorf("%s: a module without a start section exports %s", e.name, StartExport)
		}
	}
}

// TestYieldAddsSections instruments a module with one function and no
// imports, globals or exports of its own: Yield creates the sections it
// lacks, in order, with the check and $slow as the package documents.
func TestYieldAddsSections(t *testing.T) {
	t.Parallel()
	in := assemble(
		sec{secType, vecOf([]byte{0x60, 0x00, 0x00})},
		sec{secFunction, vecOf([]byte{0x00})},
		sec{secCode, vecOf(funcBody(0x0b))},
	)
	out := mustInstrument(t, in, Options{Yield: true})
	validate(t, out)
	// Globals: fuel 0, floor 1. Functions: yield 0, the module's 1, $slow 2.
	f := []byte{0x00,
		0x23, 0x00, 0x42, 0x01, 0x7d, // global.get F; i64.const 1; i64.sub
		0x24, 0x00, 0x23, 0x00, 0x23, 0x01, 0x53, 0x04, 0x40, 0x10, 0x02, 0x0b, // the check
		0x0b}
	slow := []byte{0x00,
		0x23, 0x00, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b, // trap if out of fuel
		0x10, 0x00, 0x04, 0x40, 0x00, 0x0b, // call $yield; trap unless 0
		0x0b}
	want := []sec{
		{secType, vecOf([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7f}, []byte{0x60, 0x00, 0x00})},
		{secImport, vecOf(cat(nameOf(YieldModule), nameOf(YieldName), []byte{0x00, 0x01}))},
		{secFunction, vecOf([]byte{0x00}, []byte{0x02})},
		{secGlobal, vecOf([]byte{0x7e, 0x01, 0x42, 0x00, 0x0b}, []byte{0x7e, 0x01, 0x42, 0x00, 0x0b})},
		{secExport, vecOf(cat(nameOf(FuelExport), []byte{0x03, 0x00}), cat(nameOf(FloorExport), []byte{0x03, 0x01}))},
		{secCode, vecOf(cat([]byte{byte(len(f))}, f), cat([]byte{byte(len(slow))}, slow))},
	}
	got, _ := sections(t, out)
	if fmt.Sprintf("%x", got) != fmt.Sprintf("%x", want) {
		t.Errorf("sections\n%x\nwant\n%x", got, want)
	}
}

// TestYieldChecksAtEntriesAndLoopHeads: only the segments at function
// entries and loop heads call $slow; loop.wat has two functions, each
// with one loop, and count's loop has a second segment after its br_if,
// which keeps the plain check.
func TestYieldChecksAtEntriesAndLoopHeads(t *testing.T) {
	t.Parallel()
	src := compileWAT(t, "loop")
	plain := mustInstrument(t, src, Options{})
	yielding := mustInstrument(t, src, Options{Yield: true})
	// $slow is function 3, after the yield import (0) and the module's two:
	// its call is i64.lt_s; if; call 3.
	slowCall := []byte{0x53, 0x04, 0x40, 0x10, 0x03}
	trap := []byte{0x53, 0x04, 0x40, 0x00, 0x0b}
	if n := bytes.Count(yielding, slowCall); n != 4 {
		t.Errorf("%d yield checks, want 4: two entries, two loop heads", n)
	}
	if n, all := bytes.Count(yielding, trap), bytes.Count(plain, trap); n != all-4+1 {
		// The plain checks left, and $slow's own trap on negative fuel.
		t.Errorf("%d plain checks with Yield, %d without; want %d", n, all, all-4+1)
	}
}
