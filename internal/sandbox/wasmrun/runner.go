package wasmrun

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sys/cpu"

	wasmmeter "github.com/execledger/execledger/internal/wasm/meter"

	"github.com/execledger/execledger/ledger"
)

// hostModulesFunc instantiates host modules in a runtime and returns
// their names (Config.hostModules).
type hostModulesFunc func(ctx context.Context, rt wazero.Runtime) ([]string, error)

// runner is one tool's wazero runtime: the engine, WASI, and the host
// functions modules may import.
type runner struct {
	rt       wazero.Runtime
	engine   string
	provided map[string]map[string]api.FunctionDefinition // module -> name -> definition
	meter    fuelMeter
	quantum  int64 // fuel between a running call's yields
	cfg      *Config
	compiles atomic.Int64 // modules compiled, for tests
}

// runtimeMu serializes the creation of wazero runtimes. The compiler
// engine's constructor reads wazero's version from the build info the
// first time and caches it in an unguarded package variable (wazero
// v1.12.0, internal/version), a data race when two hosts are built at
// once, as two serves in one test process do. Runtimes are made once per
// host, so the lock costs nothing.
var runtimeMu sync.Mutex

func newRuntime(ctx context.Context, rc wazero.RuntimeConfig) wazero.Runtime {
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	return wazero.NewRuntimeWithConfig(ctx, rc)
}

// newRunner starts a runtime with cfg's engine. Memory is limited per
// instance by memoryCap, not by the runtime (see memoryCap).
//
// A metered module yields every quantum of fuel, which is where its call
// ends when its time runs out or its context ends (runner.yield), so the
// runtime does not close modules on context done: that costs a goroutine
// per call and, in compiled code, a call out of the module at every loop
// turn. Only the stand-ins of tests that do not yield rely on it.
func newRunner(ctx context.Context, cfg *Config, meter fuelMeter, cache wazero.CompilationCache) (*runner, error) {
	engine := cfg.Engine
	if engine == EngineAuto {
		engine = EngineInterpreter
		if compilerSupported() {
			engine = EngineCompiler
		}
	}
	rc := wazero.NewRuntimeConfigInterpreter()
	if engine == EngineCompiler {
		rc = wazero.NewRuntimeConfigCompiler()
	}
	rc = rc.WithCloseOnContextDone(!meter.yields()).WithMemoryLimitPages(maxPages).WithCompilationCache(cache)
	rt := newRuntime(ctx, rc)
	r := &runner{rt: rt, engine: engine, provided: map[string]map[string]api.FunctionDefinition{}, meter: meter, cfg: cfg,
		quantum: yieldQuantumCompiler}
	if engine == EngineInterpreter {
		r.quantum = yieldQuantumInterpreter
	}
	if err := instantiateWASI(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasi: %w", err)
	}
	if meter.yields() {
		if err := r.instantiateYield(ctx, rt); err != nil {
			rt.Close(ctx)
			return nil, fmt.Errorf("yield: %w", err)
		}
		r.provided[wasmmeter.YieldModule] = rt.Module(wasmmeter.YieldModule).ExportedFunctionDefinitions()
	}
	caps, err := instantiateCapabilities(ctx, rt)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	names := append([]string{wasi_snapshot_preview1.ModuleName}, caps...)
	if cfg.hostModules != nil {
		more, err := cfg.hostModules(ctx, rt)
		if err != nil {
			rt.Close(ctx)
			return nil, fmt.Errorf("host modules: %w", err)
		}
		names = append(names, more...)
	}
	for _, n := range names {
		r.provided[n] = rt.Module(n).ExportedFunctionDefinitions()
	}
	return r, nil
}

// compilerSupported is wazero's own test for its compiler (which it does
// not export), so that the engine recorded is the engine used: amd64 with
// SSE4.1 or arm64, on the operating systems it generates code for.
func compilerSupported() bool {
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "windows":
		return runtime.GOARCH == "arm64" || runtime.GOARCH == "amd64" && cpu.X86.HasSSE41
	case "dragonfly", "solaris", "illumos":
		return runtime.GOARCH == "amd64" && cpu.X86.HasSSE41
	}
	return false
}

func (r *runner) close(ctx context.Context) error { return r.rt.Close(ctx) }

// program is a compiled module, ready to instantiate.
type program struct {
	compiled   wazero.CompiledModule
	digest     string // "sha256:<hex>" of the module as given
	instDigest string // of the module as compiled, after instrumentation
	size       int    // bytes, as given
	exports    map[string]api.FunctionDefinition
	hosts      []string // host modules it imports from
	wasi       bool     // hosts holds WASI: the call gets its streams, clocks and randomness

	// instrumentTime is how long bounding tables and fuel instrumentation
	// took; compileTime, validating and compiling the result (wazero does
	// both in CompileModule).
	instrumentTime, compileTime time.Duration
}

// compile checks, bounds and instruments a module, each instance to start
// with fuel, and compiles it. Its
// errors are *callError: invalid_input for a module that is malformed,
// too large or imports what no host module provides (each such import
// named), quota_exceeded for one that starts beyond the memory or table
// limit. Nothing of the module runs.
func (r *runner) compile(ctx context.Context, wasm []byte, digest string, fuel int64) (*program, error) {
	if len(wasm) > r.cfg.MaxModuleBytes {
		return nil, refuse(ledger.KindInvalidInput, "module is %d bytes; the limit is %d", len(wasm), r.cfg.MaxModuleBytes)
	}
	began := time.Now()
	bounded, err := boundTables(wasm, r.cfg.TableLimit)
	if err != nil {
		if isTableLimit(err) {
			return nil, refuse(ledger.KindQuotaExceeded, "%v", err)
		}
		return nil, refuse(ledger.KindInvalidInput, "module: %v", err)
	}
	inst, err := r.meter.instrument(bounded, fuel)
	if err != nil {
		return nil, refuse(ledger.KindInvalidInput, "instrumenting the module for fuel: %v", err)
	}
	instrumented := time.Now()
	r.compiles.Add(1)
	compiled, err := r.rt.CompileModule(ctx, inst)
	if err != nil {
		return nil, refuse(ledger.KindInvalidInput, "compiling the module: %v", err)
	}
	p := &program{compiled: compiled, digest: digest, instDigest: sha256Digest(inst), size: len(wasm),
		exports: compiled.ExportedFunctions(), instrumentTime: instrumented.Sub(began), compileTime: time.Since(instrumented)}
	if p.hosts, err = r.checkImports(compiled, inst); err == nil {
		p.wasi = slices.Contains(p.hosts, wasi_snapshot_preview1.ModuleName)
		err = r.checkMemory(inst)
	}
	if err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	return p, nil
}

// checkImports refuses a module importing anything no host module
// provides, before it is instantiated: wazero would only find out while
// linking, one import at a time.
func (r *runner) checkImports(compiled wazero.CompiledModule, wasm []byte) ([]string, error) {
	var bad []string
	hosts := map[string]bool{}
	sockets := false
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		def, ok := r.provided[mod][name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("function %s.%s", mod, name))
			sockets = sockets || mod == wasi_snapshot_preview1.ModuleName && wasiSocket(name)
		case !slices.Equal(def.ParamTypes(), f.ParamTypes()) || !slices.Equal(def.ResultTypes(), f.ResultTypes()):
			bad = append(bad, fmt.Sprintf("function %s.%s with type %s (the host's is %s)", mod, name, signature(f), signature(def)))
		case mod != wasmmeter.YieldModule: // the meter's, not the module's own
			hosts[mod] = true
		}
	}
	others, err := otherImports(wasm)
	if err != nil {
		return nil, refuse(ledger.KindInvalidInput, "module: %v", err)
	}
	bad = append(bad, others...) // no host module provides tables, memories, globals or tags
	if len(bad) > 0 {
		if len(bad) > 8 {
			bad = append(bad[:8], fmt.Sprintf("and %d more", len(bad)-8))
		}
		why := ""
		if sockets {
			why = " (" + wasiSocketRefusal + ")"
		}
		return nil, refuse(ledger.KindInvalidInput, "the module imports what tier A does not provide: %s%s", strings.Join(bad, ", "), why)
	}
	out := make([]string, 0, len(hosts))
	for h := range hosts {
		out = append(out, h)
	}
	slices.Sort(out)
	return out, nil
}

// checkMemory refuses a module whose memory starts above the limit;
// memoryCap could not allocate it.
func (r *runner) checkMemory(wasm []byte) error {
	mins, err := memoryMins(wasm)
	if err != nil {
		return refuse(ledger.KindInvalidInput, "module: %v", err)
	}
	for i, m := range mins {
		if m > r.cfg.MemoryLimitPages {
			return refuse(ledger.KindQuotaExceeded, "memory %d starts at %d pages; the limit is %d pages (%d MiB)",
				i, m, r.cfg.MemoryLimitPages, r.cfg.MemoryLimitPages/16)
		}
	}
	return nil
}

func signature(f api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(f.ParamTypes()) + " -> " + names(f.ResultTypes())
}

// ABIs of an entrypoint, by its type.
const (
	abiCommand = "wasi_command" // () -> (): JSON in on stdin, out on stdout
	abiResult  = "result"       // () -> i32 or i64: {"result": N}
)

// entry is a resolved entrypoint.
type entry struct {
	name       string
	abi        string
	i64        bool // abiResult's result is an i64
	start      bool // the module's start function, deferred by the meter: call it first
	initialize bool // a WASI reactor: call _initialize first (after start)
}

// entry resolves an entrypoint name; "" means "_start" when the module
// exports it, else "run".
func (p *program) entry(name string) (entry, error) {
	if name == "" {
		name = "run"
		if _, ok := p.exports["_start"]; ok {
			name = "_start"
		}
	}
	def, ok := p.exports[name]
	if !ok || strings.HasPrefix(name, wasmmeter.ReservedPrefix) {
		return entry{}, refuse(ledger.KindInvalidInput, "the module exports no function %q", name)
	}
	_, start := p.exports[wasmmeter.StartExport]
	e := entry{name: name, start: start}
	switch res := def.ResultTypes(); {
	case len(def.ParamTypes()) > 0 || len(res) > 1:
		return entry{}, refuse(ledger.KindInvalidInput, "entrypoint %q has type %s; want () -> i32 or () -> ()", name, signature(def))
	case len(res) == 0:
		e.abi = abiCommand
	case res[0] == api.ValueTypeI32 || res[0] == api.ValueTypeI64:
		e.abi, e.i64 = abiResult, res[0] == api.ValueTypeI64
	default:
		return entry{}, refuse(ledger.KindInvalidInput, "entrypoint %q has type %s; want () -> i32 or () -> ()", name, signature(def))
	}
	if init, ok := p.exports["_initialize"]; ok && name != "_start" {
		if len(init.ParamTypes()) > 0 || len(init.ResultTypes()) > 0 {
			return entry{}, refuse(ledger.KindInvalidInput, "_initialize has type %s; want () -> ()", signature(init))
		}
		e.initialize = true
	}
	return e, nil
}
