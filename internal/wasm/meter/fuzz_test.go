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
)

// FuzzInstrument checks, for arbitrary input, that Instrument never panics
// and fails only with its sentinels; that its output is a module it
// refuses to instrument again; and, for input wazero compiles, that the
// output compiles too and that calling each exported function with zero
// arguments gives the same results, traps and memory as the original
// unless the fuel runs out.
func FuzzInstrument(f *testing.F) {
	for _, file := range watFiles(f) {
		f.Add(compileWAT(f, strings.TrimSuffix(strings.TrimPrefix(file, "testdata/"), ".wat")))
	}
	f.Add(nullary(0x0b))
	ctx := context.Background()
	// Memory limited so that a mutated minimum cannot take gigabytes;
	// closing on context done so that an original that loops for ever
	// stops.
	cfg := wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(64).WithCloseOnContextDone(true)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	f.Cleanup(func() { rt.Close(ctx) })

	f.Fuzz(func(t *testing.T, wasm []byte) {
		// The start function gets fuel enough for anything the original's
		// finishes in the time compareRuns allows it.
		out, err := Instrument(wasm, Options{InitialFuel: 1 << 62})
		switch {
		case err == nil:
			if _, again := Instrument(out, Options{}); !errors.Is(again, ErrReservedName) {
				t.Fatalf("instrumenting the output again: %v, want ErrReservedName", again)
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
		metered, err := rt.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("instrumented module does not compile: %v", err)
		}
		defer metered.Close(ctx)
		compareRuns(t, rt, orig, metered)
	})
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

// compareRuns instantiates both modules and calls each exported function
// of the original, in name order, with zero arguments, comparing results,
// traps and exported memories. It stops comparing once the original does not finish
// in time or the instrumented one runs out of fuel.
func compareRuns(t *testing.T, rt wazero.Runtime, orig, metered wazero.CompiledModule) {
	// Only the original needs a deadline: fuel bounds the other.
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
	b, berr := rt.InstantiateModule(bg, metered, wazero.NewModuleConfig().WithName(""))
	if berr == nil {
		defer b.Close(bg)
	}
	if (aerr == nil) != (berr == nil) {
		t.Fatalf("instantiation: original %v, instrumented %v", aerr, berr)
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
		fa, fb := a.ExportedFunction(name), b.ExportedFunction(name)
		args := make([]uint64, len(fa.Definition().ParamTypes()))
		ra, ea := fa.Call(ctx, args...)
		if ctx.Err() != nil {
			return
		}
		if err := SetFuel(b, 1_000_000); err != nil {
			t.Fatal(err)
		}
		rb, eb := fb.Call(bg, args...)
		if ranOut(b) {
			return
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
}

func readAll(m api.Memory) []byte {
	b, _ := m.Read(0, m.Size())
	return b
}

// ranOut reports whether an instance of an instrumented module ran out of
// fuel.
func ranOut(mod api.Module) bool {
	fuel, err := Fuel(mod)
	return err != nil || fuel < 0
}
