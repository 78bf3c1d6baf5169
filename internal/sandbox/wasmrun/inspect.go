package wasmrun

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/execledger/execledger/ledger"
)

// Inspection is what tier A makes of a module without running it.
type Inspection struct {
	Size        int
	Exports     []string // exported function names, sorted
	ExportCount int      // exports of every kind: functions, memories, tables, globals
	Imports     []Import // imported functions, by module then name, each once
	HostModules []string // host modules it imports from (the meter's excluded)
	// InstrumentedDigest is "sha256:<hex>" of the module after fuel
	// instrumentation ("" when the host does not meter).
	InstrumentedDigest string
	// Validate is wazero's decoding and validation of the module as
	// given, measured as a CompileModule in an interpreter runtime (wazero
	// has no validate-only call, so it includes the interpreter's cheap
	// lowering). Instrument is table bounding and fuel instrumentation.
	// Compile is the compile of the instrumented module in the host's
	// engine, which wazero does not separate from validating it again.
	// A step that did not run is 0.
	Validate, Instrument, Compile time.Duration

	validated bool
	exports   map[string]api.FunctionDefinition // of the module as given
}

// Import is an imported function.
type Import struct{ Module, Name string }

// Steps of an inspection, in the order Inspect takes them. An
// *InspectError names the one that failed.
const (
	StepSize       = "size"       // over Config.MaxModuleBytes
	StepValidate   = "validate"   // wazero refuses the module as given
	StepMemory     = "memory"     // a memory starts above the limit
	StepTables     = "tables"     // a table starts above the limit
	StepInstrument = "instrument" // the fuel meter cannot instrument it
	StepCompile    = "compile"    // the instrumented module does not compile
	StepImports    = "imports"    // it imports what tier A does not provide
	StepEntrypoint = "entrypoint" // no such function, or not of an entrypoint's type
)

// InspectError is the first problem Inspect found, and its step.
type InspectError struct {
	Step string
	Err  error
}

func (e *InspectError) Error() string { return e.Err.Error() }
func (e *InspectError) Unwrap() error { return e.Err }

// Inspect checks wasm as New checks a registered module — size,
// validity, memory and table limits, fuel instrumentation with New's
// meter, compilation in cfg's engine, the imports tier A provides, the
// entrypoint ("" for the default rule: "_start" if exported, else "run")
// — in runtimes of its own, closed before it returns, and reports what it
// found. Nothing of the module runs. With cfg.CacheDir, the machine code
// of the instrumented module is kept there, where a host on the same
// directory building the module with the same fuel finds it instead of
// compiling it again (serve's skills: the audit before a skill's first
// call, then its tool).
//
// Its error is an *InspectError naming the first problem in the words a
// failing registration uses (or a plain error for an invalid cfg; and
// for size, plugin.run's words: New refuses the file before reading it).
// The order differs from New's in one way: the memory limit is checked
// before instrumentation (the meter leaves memories as they are). On
// error the Inspection holds what the steps before the failing one found:
// after validation, the exports, imports and CheckEntrypoint.
func Inspect(ctx context.Context, cfg Config, wasm []byte, entrypoint string) (Inspection, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Inspection{}, fmt.Errorf("wasmrun: %w", err)
	}
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		if cache, err = compilationCache(cfg.CacheDir); err != nil {
			return Inspection{}, fmt.Errorf("wasmrun: %w", err)
		}
		defer cache.Close(context.WithoutCancel(ctx)) // after the runtime: defers run last first
	}
	r, err := newRunner(ctx, &cfg, newMeter(), cache)
	if err != nil {
		return Inspection{}, fmt.Errorf("wasmrun: %w", err)
	}
	defer r.close(context.WithoutCancel(ctx)) // and every module compiled in it
	in := Inspection{Size: len(wasm)}
	if len(wasm) > cfg.MaxModuleBytes {
		_, err := r.compile(ctx, wasm, "", cfg.FuelLimit)
		return in, &InspectError{StepSize, err}
	}
	if err := in.validate(ctx, wasm); err != nil {
		// Registration's words for the problem (its pipeline meets it
		// too), else wazero's.
		if _, rerr := r.compile(ctx, wasm, "", cfg.FuelLimit); rerr != nil {
			err = rerr
		}
		return in, &InspectError{StepValidate, err}
	}
	if err := r.checkMemory(wasm); err != nil {
		return in, &InspectError{StepMemory, err}
	}
	p, err := r.compile(ctx, wasm, sha256Digest(wasm), cfg.FuelLimit)
	if err != nil {
		return in, &InspectError{compileStep(err), err}
	}
	in.HostModules, in.Instrument, in.Compile = p.hosts, p.instrumentTime, p.compileTime
	if r.meter.metered() {
		in.InstrumentedDigest = p.instDigest
	}
	if _, err := p.entry(entrypoint); err != nil {
		return in, &InspectError{StepEntrypoint, err}
	}
	return in, nil
}

// CheckEntrypoint checks name as Inspect checks its entrypoint argument,
// without compiling the module again. It is for a module that more than
// one tool runs, and needs a module that validated.
func (in Inspection) CheckEntrypoint(name string) error {
	if !in.validated {
		return refuse(ledger.KindInvalidInput, "the module did not validate: it has no entrypoints")
	}
	_, err := (&program{exports: in.exports}).entry(name)
	return err
}

// validate decodes and validates wasm with wazero, in an interpreter
// runtime of its own, and records what the module exports and imports.
func (in *Inspection) validate(ctx context.Context, wasm []byte) error {
	rt := newRuntime(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(maxPages))
	defer rt.Close(context.WithoutCancel(ctx))
	began := time.Now()
	compiled, err := rt.CompileModule(ctx, wasm)
	in.Validate = time.Since(began)
	if err != nil {
		return refuse(ledger.KindInvalidInput, "compiling the module: %v", err)
	}
	if in.ExportCount, err = exportCount(wasm); err != nil {
		return refuse(ledger.KindInvalidInput, "module: %v", err)
	}
	// Definitions are plain data: they outlive the runtime.
	in.validated, in.exports = true, compiled.ExportedFunctions()
	in.Exports = slices.Sorted(maps.Keys(in.exports))
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		in.Imports = append(in.Imports, Import{mod, name})
	}
	slices.SortFunc(in.Imports, func(a, b Import) int {
		return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.Name, b.Name))
	})
	in.Imports = slices.Compact(in.Imports) // a module may import one function twice
	return nil
}

// compileSteps are the beginnings of runner.compile's messages, by the
// step that writes them. TestInspectSteps holds each to its message.
var compileSteps = []struct{ prefix, step string }{
	{"module is ", StepSize},
	{"table limit: ", StepTables},
	{"module: ", StepValidate}, // the binary readers, after wazero validated it
	{"instrumenting the module for fuel: ", StepInstrument},
	{"compiling the module: ", StepCompile},
	{"the module imports what tier A does not provide", StepImports},
	{"memory ", StepMemory},
}

// compileStep is the step of runner.compile's error; StepCompile for
// one it does not know.
func compileStep(err error) string {
	for _, s := range compileSteps {
		if strings.HasPrefix(err.Error(), s.prefix) {
			return s.step
		}
	}
	return StepCompile
}

// exportCount is the number of exports of every kind: the count that
// opens the export section.
func exportCount(wasm []byte) (int, error) {
	const secExport = 7
	secs, err := sections(wasm)
	if err != nil {
		return 0, err
	}
	r := contents(wasm, secs, secExport)
	if r == nil {
		return 0, nil
	}
	n := r.u32()
	return int(n), r.err
}
