package wasmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/wasm/meter"
)

// BenchmarkTrivialSkill is a registered skill's Tool.Run of the trivial
// () -> i32 module, fuel-instrumented: slot, timeout, fresh instance with
// WASI configured, call, close, result with its records. The context can
// be cancelled, as the executor's is. Compare BenchmarkRawWazero, the same
// module instantiated, called and closed by a bare runtime.
func BenchmarkTrivialSkill(b *testing.B) {
	benchmarkSkill(b, "answer", 0)
}

// BenchmarkRawWazero instantiates, calls and closes the trivial module,
// precompiled, with a bare runtime of the engine: no close on context
// done, no fuel, no WASI, no allocator, no result records. Its module
// config has an empty random source: wazero's default seeds a math/rand
// source per instance, which costs more than everything else here.
func BenchmarkRawWazero(b *testing.B) {
	benchmarkRaw(b, "answer", false)
}

// cpuHeavy are the modules of the CPU-heavy benchmarks: fib(27)
// recursively (about 8 million instructions, a function entry every 12
// or so), a sum in one tight loop (27 million, a loop head every 9), and
// the Go echo skill (a WASI command: Go's runtime starting, 3 million).
var cpuHeavy = []string{"fib", "sum", "echo"}

// benchModule is a benchmark's module: echo is built from Go, the others
// from testdata/<name>.wat.
func benchModule(b *testing.B, name string) []byte {
	if name == "echo" {
		return echoWasm(b)
	}
	return wat(b, name)
}

// BenchmarkCPUHeavySkill is BenchmarkTrivialSkill with the cpuHeavy
// modules, metered, yielding every 2^20 units of fuel.
func BenchmarkCPUHeavySkill(b *testing.B) {
	for _, name := range cpuHeavy {
		b.Run(name, func(b *testing.B) { benchmarkSkill(b, name, 100_000_000) })
	}
}

// BenchmarkCPUHeavyRaw runs BenchmarkCPUHeavySkill's modules with a bare
// runtime: unmetered, and (/before) metered without yields under wazero's
// WithCloseOnContextDone, the way tier A ran them before its modules
// yielded: a goroutine per call, and a call out of the compiled code at
// every loop head.
func BenchmarkCPUHeavyRaw(b *testing.B) {
	for _, name := range cpuHeavy {
		b.Run(name, func(b *testing.B) {
			benchmarkRaw(b, name, false)
			benchmarkRaw(b, name, true)
		})
	}
}

func benchmarkSkill(b *testing.B, name string, fuel int64) {
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		b.Run(engine, func(b *testing.B) {
			m := module(b, "acme.bench", benchModule(b, name))
			m.FuelLimit = fuel
			h := host(b, Config{Engine: engine, Modules: []Module{m}})
			tool := h.Tool("acme.bench")
			call := executor.Call{RequestID: uuid.New(), Attempt: 1, Principal: "bench", Input: json.RawMessage(`{}`)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if res := tool.Run(ctx, call); res.ErrorKind != "" {
					b.Fatal(res.Error)
				}
			}
		})
	}
}

// benchmarkRaw runs module name's run in a bare runtime; before, metered
// as tier A did before yields: fuel checks, close on context done.
func benchmarkRaw(b *testing.B, name string, before bool) {
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		sub := engine
		if before {
			sub += "/before"
		}
		b.Run(sub, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rc := wazero.NewRuntimeConfigCompiler()
			if engine == EngineInterpreter {
				rc = wazero.NewRuntimeConfigInterpreter()
			}
			rt := wazero.NewRuntimeWithConfig(ctx, rc.WithCloseOnContextDone(before))
			defer rt.Close(ctx)
			wasm := benchModule(b, name)
			if before {
				var err error
				if wasm, err = meter.Instrument(wasm, meter.Options{InitialFuel: 1 << 40}); err != nil {
					b.Fatal(err)
				}
			}
			compiled, err := rt.CompileModule(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			entry := "run"
			if _, ok := compiled.ExportedFunctions()["_start"]; ok {
				entry = "_start" // a WASI command: its input on stdin
				wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			}
			mc := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(bytes.NewReader(nil))
			b.ReportAllocs()
			for b.Loop() {
				mod, err := rt.InstantiateModule(ctx, compiled, mc.WithStdin(strings.NewReader("{}")))
				if err != nil {
					b.Fatal(err)
				}
				_, err = mod.ExportedFunction(entry).Call(ctx)
				if exit, ok := err.(*sys.ExitError); err != nil && (!ok || exit.ExitCode() != 0) {
					b.Fatal(err)
				}
				mod.Close(ctx)
			}
		})
	}
}
