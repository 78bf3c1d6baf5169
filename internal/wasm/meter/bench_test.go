package meter

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// BenchmarkInstrument instruments the Go wasip1 module of testdata/goprog
// (about 2.8 MB).
func BenchmarkInstrument(b *testing.B) {
	wasm := buildGoProgram(b)
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Instrument(wasm, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMeteredVsUnmetered runs CPU-heavy functions as compiled and as
// instrumented, on both engines: fib(25) of testdata/fib.wat, 242,785
// small calls, and sort(2000) of testdata/sort.wat, an insertion sort of
// about a million loop turns.
func BenchmarkMeteredVsUnmetered(b *testing.B) {
	ctx := context.Background()
	workloads := []struct {
		name, file string
		call       func(b *testing.B, mod api.Module)
	}{
		{"fib25", "fib", func(b *testing.B, mod api.Module) {
			if res, err := mod.ExportedFunction("fib").Call(ctx, 25); err != nil || res[0] != 75025 {
				b.Fatalf("fib(25) = %v, %v", res, err)
			}
		}},
		{"sort2000", "sort", func(b *testing.B, mod api.Module) {
			for _, c := range []struct {
				fn   string
				args []uint64
			}{{"fill", []uint64{42, 2000}}, {"sort", []uint64{2000}}} {
				if _, err := mod.ExportedFunction(c.fn).Call(ctx, c.args...); err != nil {
					b.Fatalf("%s: %v", c.fn, err)
				}
			}
		}},
	}
	for _, w := range workloads {
		src := compileWAT(b, w.file)
		wasm := mustInstrument(b, src, Options{})
		for _, e := range engines() {
			b.Run(w.name+"/"+e.name+"/unmetered", func(b *testing.B) {
				mod := instantiate(b, e, src)
				for b.Loop() {
					w.call(b, mod)
				}
			})
			b.Run(w.name+"/"+e.name+"/metered", func(b *testing.B) {
				mod := instantiate(b, e, wasm)
				for b.Loop() {
					if err := SetFuel(mod, 1<<40); err != nil {
						b.Fatal(err)
					}
					w.call(b, mod)
				}
			})
		}
	}
}
