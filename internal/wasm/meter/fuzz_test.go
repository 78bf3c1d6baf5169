package meter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// FuzzInstrument checks, for arbitrary input, that Instrument never panics
// and fails only with its sentinels; that its output is a module it
// refuses to instrument again; and, for input wazero compiles, that the
// output, with and without Options.Yield, compiles too and that calling
// each exported function with zero arguments gives the same results,
// traps and memory as the original unless the fuel runs out, and the same
// fuel with Yield as without.
func FuzzInstrument(f *testing.F) {
	for _, file := range watFiles(f) {
		f.Add(compileWAT(f, strings.TrimSuffix(strings.TrimPrefix(file, "testdata/"), ".wat")))
	}
	f.Add(nullary(0x0b))
	ctx := context.Background()
	// Memory limited so that a mutated minimum cannot take gigabytes;
	// closing on context done so that an original that loops for ever
	// stops.
	// Tail calls enabled and env instantiated for testdata/renumber.wat.
	cfg := wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(64).WithCloseOnContextDone(true).
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	f.Cleanup(func() { rt.Close(ctx) })
	instantiateYield(f, rt, &yielder{quantum: 1000})
	instantiateEnv(f, rt)

	f.Fuzz(func(t *testing.T, wasm []byte) {
		// The start function gets fuel enough for anything the original's
		// finishes in the time compareRuns allows it.
		out, err := Instrument(wasm, Options{InitialFuel: 1 << 62})
		yout, yerr := Instrument(wasm, Options{InitialFuel: 1 << 62, Yield: true})
		if (err == nil) != (yerr == nil) {
			t.Fatalf("Instrument: %v, with Yield %v", err, yerr)
		}
		switch {
		case err == nil:
			for _, o := range [][]byte{out, yout} {
				if _, again := Instrument(o, Options{}); !errors.Is(again, ErrReservedName) {
					t.Fatalf("instrumenting the output again: %v, want ErrReservedName", again)
				}
			}
		case !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrReservedName):
			t.Fatalf("error with no sentinel: %v", err)
		}
		if !decodable(wasm) {
			return
		}
		orig, cerr := rt.CompileModule(ctx, wasm)
		if cerr != nil {
			return // not a valid module: nothing to hold the output to
		}
		defer orig.Close(ctx)
		if errors.Is(err, ErrReservedName) {
			return
		}
		if err != nil {
			t.Fatalf("wazero compiles the module but Instrument refused it: %v", err)
		}
		metered := mustCompile(t, rt, out)
		defer metered.Close(ctx)
		yielding := mustCompile(t, rt, yout)
		defer yielding.Close(ctx)
		compareRuns(t, rt, orig, metered, yielding)
	})
}

// mustCompile compiles an instrumented module.
func mustCompile(t *testing.T, rt wazero.Runtime, wasm []byte) wazero.CompiledModule {
	t.Helper()
	c, err := rt.CompileModule(context.Background(), wasm)
	if err != nil {
		t.Fatalf("instrumented module does not compile: %v", err)
	}
	return c
}

// decodable reports whether wazero can decode wasm without a forged length
// making it allocate gigabytes: it sizes vectors by their declared lengths
// before reading them. parseModule bounds the lengths in the sections it
// reads; this adds function bodies' locals and the name section.
func decodable(wasm []byte) bool {
	m, err := parseModule(wasm)
	if err != nil {
		return false
	}
	for _, b := range m.bodies {
		r := newReader(b.data, 0)
		decls, err := r.count(2)
		if err != nil {
			return false
		}
		if n, err := readLocals(r, decls); err != nil || n > maxLocals {
			return false
		}
	}
	for _, s := range m.sections {
		r := newReader(s.data, 0)
		if name, _ := r.name(); s.id == secCustom && name == "name" && !namesBounded(r) {
			return false
		}
	}
	return true
}

// namesBounded reads a name section's subsections, checking every vector
// length against the bytes left.
func namesBounded(r *reader) bool {
	nameMap := func() bool {
		return vec(r, 2, func() error {
			if _, err := r.u32(); err != nil {
				return err
			}
			_, err := r.name()
			return err
		}) == nil
	}
	for r.len() > 0 {
		id, err := r.byte()
		if err != nil {
			return false
		}
		size, err := r.u32()
		if err != nil {
			return false
		}
		switch id {
		case 0:
			if _, err := r.name(); err != nil {
				return false
			}
		case 1:
			if !nameMap() {
				return false
			}
		case 2:
			if vec(r, 2, func() error {
				if _, err := r.u32(); err != nil {
					return err
				}
				if !nameMap() {
					return errors.New("bad name map")
				}
				return nil
			}) != nil {
				return false
			}
		default:
			if _, err := r.bytes(uint64(size)); err != nil {
				return false
			}
		}
	}
	return true
}

// compareRuns instantiates the original and its instrumented versions
// and calls each exported function of the original, in name order, with
// zero arguments, comparing results, traps and exported memories with the
// original's, and the fuel used between instrumented versions. A version
// instrumented with Yield gets the floor 1000 below its fuel, for a yield
// that the runtime provides. It stops comparing once the original does not
// finish in time or the instrumented ones run out of fuel.
func compareRuns(t *testing.T, rt wazero.Runtime, orig wazero.CompiledModule, metered ...wazero.CompiledModule) {
	// Only the original needs a deadline: fuel bounds the others.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	bg := context.Background()
	a, aerr := rt.InstantiateModule(ctx, orig, wazero.NewModuleConfig().WithName(""))
	if aerr == nil {
		defer a.Close(bg)
	}
	if ctx.Err() != nil {
		return
	}
	var bs []api.Module
	for _, m := range metered {
		b, berr := rt.InstantiateModule(bg, m, wazero.NewModuleConfig().WithName(""))
		if berr == nil {
			defer b.Close(bg)
			bs = append(bs, b)
		}
		if (aerr == nil) != (berr == nil) {
			t.Fatalf("instantiation: original %v, instrumented %v", aerr, berr)
		}
	}
	if aerr != nil {
		return
	}
	names := make([]string, 0, len(orig.ExportedFunctions()))
	for name := range orig.ExportedFunctions() {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fa := a.ExportedFunction(name)
		args := make([]uint64, len(fa.Definition().ParamTypes()))
		ra, ea := fa.Call(ctx, args...)
		if ctx.Err() != nil {
			return
		}
		const fuel = 1_000_000
		var left []int64
		for _, b := range bs {
			if err := SetFuel(b, fuel); err != nil {
				t.Fatal(err)
			}
			if err := SetFloor(b, fuel-1000); err != nil && !errors.Is(err, ErrNoYield) {
				t.Fatal(err)
			}
			rb, eb := b.ExportedFunction(name).Call(bg, args...)
			l, _ := Fuel(b)
			left = append(left, l)
			if l < 0 {
				continue
			}
			if (ea == nil) != (eb == nil) || fmt.Sprint(ra) != fmt.Sprint(rb) {
				t.Fatalf("%s(): original %v (%v), instrumented %v (%v)", name, ra, ea, rb, eb)
			}
			for mem := range orig.ExportedMemories() {
				if !bytes.Equal(readAll(a.ExportedMemory(mem)), readAll(b.ExportedMemory(mem))) {
					t.Fatalf("%s(): memory %q differs", name, mem)
				}
			}
		}
		for _, l := range left[1:] {
			if l != left[0] {
				t.Fatalf("%s(): fuel left %v differs between instrumented versions", name, left)
			}
		}
		if left[0] < 0 {
			return
		}
	}
}

func readAll(m api.Memory) []byte {
	b, _ := m.Read(0, m.Size())
	return b
}
