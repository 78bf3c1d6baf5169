package wasmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/tetratelabs/wazero"

	"github.com/execledger/execledger/executor"
)

// BenchmarkTrivialSkill is a registered skill's Tool.Run of the trivial
// () -> i32 module, fuel-instrumented: slot, timeout, fresh instance with
// WASI configured, call, close, result with its records. Compare
// BenchmarkRawWazero, the same module instantiated, called and closed by
// a bare runtime.
func BenchmarkTrivialSkill(b *testing.B) {
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		b.Run(engine, func(b *testing.B) {
			h := host(b, Config{Engine: engine, Modules: []Module{module(b, "acme.answer", wat(b, "answer"))}})
			tool := h.Tool("acme.answer")
			call := executor.Call{RequestID: uuid.New(), Attempt: 1, Principal: "bench", Input: json.RawMessage(`{}`)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := tool.Run(ctx, call); res.ErrorKind != "" {
					b.Fatal(res.Error)
				}
			}
		})
	}
}

// BenchmarkRawWazero instantiates, calls and closes the trivial module,
// precompiled, with a bare runtime of the engine: no close on context
// done, no fuel, no WASI, no allocator, no result records. Its module
// config has an empty random source: wazero's default seeds a math/rand
// source per instance, which costs more than everything else here.
func BenchmarkRawWazero(b *testing.B) {
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			rc := wazero.NewRuntimeConfigCompiler()
			if engine == EngineInterpreter {
				rc = wazero.NewRuntimeConfigInterpreter()
			}
			rt := wazero.NewRuntimeWithConfig(ctx, rc)
			defer rt.Close(ctx)
			compiled, err := rt.CompileModule(ctx, wat(b, "answer"))
			if err != nil {
				b.Fatal(err)
			}
			mc := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(bytes.NewReader(nil))
			b.ReportAllocs()
			for b.Loop() {
				mod, err := rt.InstantiateModule(ctx, compiled, mc)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := mod.ExportedFunction("run").Call(ctx); err != nil {
					b.Fatal(err)
				}
				mod.Close(ctx)
			}
		})
	}
}
