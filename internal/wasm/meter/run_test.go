package meter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// isOutOfFuel reports whether a call ended for lack of fuel: a trap with
// the fuel negative.
func isOutOfFuel(err error, used, fuel int64) bool {
	return err != nil && strings.Contains(err.Error(), "unreachable") && used > fuel
}

func TestCostModel(t *testing.T) {
	t.Parallel()
	type check struct {
		file, fn string
		arg      uint64
		want     func(n, instr, unit int64) int64 // fuel used for argument n
		unit     func(o Options) uint32
	}
	byteCost := func(o Options) uint32 { return o.ByteCost }
	pageCost := func(o Options) uint32 { return o.PageCost }
	perInstr := func(k int64) func(n, instr, unit int64) int64 {
		return func(n, instr, unit int64) int64 { return k*instr + n*unit }
	}
	checks := []check{
		{"loop", "count", 0, func(n, i, _ int64) int64 { return (9*n + 8) * i }, nil},
		{"loop", "count", 1, func(n, i, _ int64) int64 { return (9*n + 8) * i }, nil},
		{"loop", "count", 1000, func(n, i, _ int64) int64 { return (9*n + 8) * i }, nil},
		{"recurse", "depth", 0, func(n, i, _ int64) int64 { return (11*n + 6) * i }, nil},
		{"recurse", "depth", 100, func(n, i, _ int64) int64 { return (11*n + 6) * i }, nil},
		{"bulk", "fill", 0, perInstr(5), byteCost},
		{"bulk", "fill", 4096, perInstr(5), byteCost},
		{"bulk", "copy", 1000, perInstr(5), byteCost},
		{"bulk", "init", 36, perInstr(5), byteCost},
		{"bulk", "tfill", 16, perInstr(5), byteCost},
		{"bulk", "tcopy", 8, perInstr(5), byteCost},
		{"bulk", "tinit", 4, perInstr(5), byteCost},
		{"bulk", "tgrow", 10, perInstr(4), byteCost},
		{"bulk", "grow", 1, perInstr(3), pageCost},
		{"bulk", "grow", 100, perInstr(3), pageCost}, // refused (-1), still charged
	}
	for _, opts := range []Options{{}, {InstructionCost: 3, ByteCost: 2, PageCost: 7}} {
		o := opts.withDefaults()
		wasm := map[string][]byte{}
		for _, c := range checks {
			if wasm[c.file] == nil {
				wasm[c.file] = mustInstrument(t, compileWAT(t, c.file), opts)
			}
		}
		for _, e := range engines() {
			for _, c := range checks {
				mod := instantiate(t, e, wasm[c.file])
				unit := int64(0)
				if c.unit != nil {
					unit = int64(c.unit(o))
				}
				want := c.want(int64(c.arg), int64(o.InstructionCost), unit)
				if _, used := mustRun(t, mod, 1<<40, c.fn, c.arg); used != want {
					t.Errorf("%s %+v: %s(%d) used %d fuel, want %d", e.name, opts, c.fn, c.arg, used, want)
				}
			}
		}
	}
}

func TestInfiniteLoopRunsOutOfFuel(t *testing.T) {
	t.Parallel()
	wasm := mustInstrument(t, compileWAT(t, "loop"), Options{})
	for _, e := range engines() {
		mod := instantiate(t, e, wasm)
		const fuel = 1_000_000
		_, used, err := run(t, mod, fuel, "spin")
		// Entry costs 1 and each turn 1: the charge that finds nothing
		// left takes the fuel to exactly -1.
		if !isOutOfFuel(err, used, fuel) || used != fuel+1 {
			t.Errorf("%s: spin: used %d of %d, err %v; want out of fuel at -1", e.name, used, fuel, err)
		}
		// The instance is still usable, and fuel set again.
		if res, _ := mustRun(t, mod, 1000, "count", 3); res[0] != 3 {
			t.Errorf("%s: count after running out: %v", e.name, res)
		}
	}
}

func TestRecursionBombRunsOutOfFuel(t *testing.T) {
	t.Parallel()
	wasm := mustInstrument(t, compileWAT(t, "recurse"), Options{})
	for _, e := range engines() {
		mod := instantiate(t, e, wasm)
		// 2 fuel a level: 500 levels use 1000, the 501st leaves -2,
		// well before either engine's call stack limit.
		const fuel = 1000
		_, used, err := run(t, mod, fuel, "bomb")
		if !isOutOfFuel(err, used, fuel) || used != fuel+2 {
			t.Errorf("%s: bomb: used %d of %d, err %v; want out of fuel at -2", e.name, used, fuel, err)
		}
		// With fuel to spare the engine's stack limit ends it instead, and
		// the fuel left says it was not the meter. Where depends on the
		// engine, so this fuel is not deterministic across engines.
		_, used, err = run(t, mod, 1<<40, "bomb")
		if err == nil || used > 1<<40 {
			t.Errorf("%s: bomb with plenty of fuel: used %d, err %v; want a stack overflow", e.name, used, err)
		}
		t.Logf("%s: stack overflow after %d levels", e.name, used/2)
	}
}

func TestBulkOperations(t *testing.T) {
	t.Parallel()
	wasm := mustInstrument(t, compileWAT(t, "bulk"), Options{})
	for _, e := range engines() {
		mod := instantiate(t, e, wasm)
		// Too little fuel for the bytes: the charge traps before a byte
		// is written.
		_, used, err := run(t, mod, 1000, "fill", 60000)
		if !isOutOfFuel(err, used, 1000) || used != 5+60000 {
			t.Errorf("%s: fill(60000) with 1000 fuel: used %d, err %v", e.name, used, err)
		}
		if res, _ := mustRun(t, mod, 1<<20, "sum", 0, 60000); res[0] != 0 {
			t.Errorf("%s: memory written after running out of fuel: sum %d", e.name, res[0])
		}
		// Out of bounds is the engine's trap, with the bytes paid for.
		_, used, err = run(t, mod, 1<<20, "fill", 200000)
		if err == nil || !strings.Contains(err.Error(), "out of bounds") || used != 5+200000 {
			t.Errorf("%s: fill(200000) past memory: used %d, err %v", e.name, used, err)
		}
	}
}

func TestStartFunctionUsesInitialFuel(t *testing.T) {
	t.Parallel()
	src := compileWAT(t, "start")
	for _, e := range engines() {
		mod := instantiate(t, e, mustInstrument(t, src, Options{InitialFuel: 10}))
		if left, _ := Fuel(mod); left != 10-3 {
			t.Errorf("%s: fuel after the start function %d, want 7", e.name, left)
		}
		if res, _ := mustRun(t, mod, 10, "get"); res[0] != 42 {
			t.Errorf("%s: get = %v", e.name, res)
		}
	}
	// With no initial fuel nothing runs: instantiation traps.
	unfunded := mustInstrument(t, src, Options{})
	for _, e := range engines() {
		if err := tryInstantiate(e, unfunded); err == nil {
			t.Errorf("%s: the start function ran without fuel", e.name)
		}
	}
}

// step is one call of a corpus script.
type step struct {
	fn   string
	args []uint64
}

func steps(fn string, argLists ...[]uint64) []step {
	var out []step
	for _, a := range argLists {
		out = append(out, step{fn, a})
	}
	return out
}

// corpus lists, per testdata module, calls whose results and fuel the
// tests compare. Later calls see the memory earlier ones left.
func corpus() map[string][]step {
	a := func(v ...uint64) []uint64 { return v }
	concat := func(ss ...[]step) []step {
		var out []step
		for _, s := range ss {
			out = append(out, s...)
		}
		return out
	}
	return map[string][]step{
		"loop":    steps("count", a(0), a(1), a(12345)),
		"recurse": steps("depth", a(0), a(1), a(500)),
		"bulk": concat(
			steps("init", a(36)), steps("sum", a(100, 36)),
			steps("fill", a(1000)), steps("copy", a(700)), steps("sum", a(65536, 1000)),
			steps("nulls", nil), steps("tfill", a(3)), steps("tcopy", a(8)), steps("nulls", nil),
			steps("tinit", a(4)), steps("tgrow", a(10)), steps("nulls", nil),
			steps("grow", a(1), a(1), a(5)), steps("drop", nil),
			steps("init", a(1)),      // traps: the segment was dropped
			steps("copy", a(200000)), // traps: out of bounds
		),
		"control": concat(
			steps("classify", a(0), a(1), a(2), a(3), a(4), a(1<<31)),
			steps("gcd", a(1071, 462), a(17, 5), a(0, 9)),
			steps("swapsub", a(3, 10)),
			steps("pick", a(0), a(1)),
			steps("nest", a(0), a(20), a(1000)),
			steps("dispatch", a(0, 21), a(1, 21), a(2, 21)),
			steps("calls", nil),
			steps("misc", a(0xff), a(0x8000), a(0xfffffffb)),
		),
		"fib":   steps("fib", a(0), a(1), a(20)),
		"sort":  concat(steps("fill", a(42, 2000)), steps("checksum", a(2000)), steps("sort", a(2000)), steps("checksum", a(2000))),
		"simd":  steps("simd", a(5), a(0xffffffff)),
		"start": steps("get", nil),
	}
}

// outcome is what a call did, to compare runs.
type outcome struct {
	results []uint64
	trapped bool
	used    int64
}

func (o outcome) String() string {
	return fmt.Sprintf("%v trapped=%v fuel=%d", o.results, o.trapped, o.used)
}

func TestInstrumentedBehavesLikeOriginal(t *testing.T) {
	t.Parallel()
	for name, script := range corpus() {
		src := compileWAT(t, name)
		wasm := mustInstrument(t, src, Options{InitialFuel: 1000})
		var first []outcome
		for _, e := range engines() {
			for round := range 2 {
				orig := instantiate(t, e, src)
				metered := instantiate(t, e, wasm)
				var got []outcome
				for i, s := range script {
					want, werr := orig.ExportedFunction(s.fn).Call(t.Context(), s.args...)
					res, used, err := run(t, metered, 1<<40, s.fn, s.args...)
					o := outcome{res, err != nil, used}
					if fmt.Sprint(want) != fmt.Sprint(res) || (werr != nil) != o.trapped {
						t.Errorf("%s %s step %d %s%v: original %v (%v), instrumented %v (%v)",
							e.name, name, i, s.fn, s.args, want, werr, res, err)
					}
					got = append(got, o)
				}
				if first == nil {
					first = got
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(first) {
					t.Errorf("%s %s round %d: outcomes %v differ from compiler round 0 %v", e.name, name, round, got, first)
				}
			}
		}
		t.Logf("%s: %v", name, first)
	}
}

func TestFuelNeedsAMeteredModule(t *testing.T) {
	t.Parallel()
	e := engines()[1]
	plain := instantiate(t, e, compileWAT(t, "loop"))
	if err := SetFuel(plain, 10); !errors.Is(err, ErrNotMetered) {
		t.Errorf("SetFuel on an uninstrumented module: %v, want ErrNotMetered", err)
	}
	if _, err := Fuel(plain); !errors.Is(err, ErrNotMetered) {
		t.Errorf("Fuel on an uninstrumented module: %v, want ErrNotMetered", err)
	}
	metered := instantiate(t, e, mustInstrument(t, compileWAT(t, "loop"), Options{InitialFuel: 5}))
	if left, err := Fuel(metered); err != nil || left != 5 {
		t.Errorf("Fuel before any call = %d, %v; want InitialFuel 5", left, err)
	}
	if err := SetFuel(metered, -1); err == nil {
		t.Error("SetFuel accepted negative fuel")
	}
}

// TestCharge checks that a host's charge comes off the fuel, may take it
// below zero as running out in code does, and leaves fuel already
// negative as it is.
func TestCharge(t *testing.T) {
	t.Parallel()
	e := engines()[1]
	mod := instantiate(t, e, mustInstrument(t, compileWAT(t, "loop"), Options{InitialFuel: 100}))
	steps := []struct{ cost, want int64 }{{0, 100}, {30, 70}, {70, 0}, {5, -5}, {1 << 62, -5}}
	for _, s := range steps {
		left, err := Charge(mod, s.cost)
		if err != nil || left != s.want {
			t.Fatalf("Charge(%d) = %d, %v; want %d", s.cost, left, err, s.want)
		}
		if f, _ := Fuel(mod); f != s.want {
			t.Fatalf("Fuel after Charge(%d) = %d, want %d", s.cost, f, s.want)
		}
	}
	if _, err := Charge(mod, -1); err == nil {
		t.Error("Charge accepted a negative cost")
	}
	if _, err := Charge(instantiate(t, e, compileWAT(t, "loop")), 1); !errors.Is(err, ErrNotMetered) {
		t.Errorf("Charge on an uninstrumented module: %v, want ErrNotMetered", err)
	}
}
