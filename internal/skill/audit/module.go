package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/execledger/execledger/internal/sandbox/wasmrun"
)

// presence: every tool's module exists, every module serves a tool.
func (r *Report) presence(in Input) {
	used := map[string][]string{}
	for _, e := range in.Entrypoints {
		used[e.Module] = append(used[e.Module], e.Tool)
		if _, ok := in.Modules[e.Module]; !ok {
			r.add("module_present", e.Module, false, "tool %s runs it, and the artifact does not hold it", e.Tool)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(in.Modules)) {
		tools := used[path]
		r.add("module_present", path, len(tools) > 0, "%s", orElse(tools, "used by ", "no tool uses it"))
	}
}

// module checks one module.
func (r *Report) module(ctx context.Context, in Input, path string) {
	wasm := in.Modules[path]
	limit := min(in.MaxModuleBytes, positiveOr(in.Wasm.MaxModuleBytes, wasmrun.DefaultMaxModuleBytes))
	r.add("module_size", path, len(wasm) <= limit, "%d bytes (the limit is %d)", len(wasm), limit)
	if len(wasm) > limit {
		return
	}
	insp, ok := r.inspect(ctx, in, path)
	if !ok {
		return
	}
	r.add("exports_limit", path, insp.ExportCount <= in.MaxExports, "%d exports (the limit is %d)", insp.ExportCount, in.MaxExports)
	for _, e := range in.Entrypoints {
		if e.Module == path {
			r.entrypoint(e, insp)
		}
	}
	r.filesystemImports(path, insp, in.Capabilities)
}

// pipeline is wasmrun.Inspect's steps in order, to tell which it reached.
var pipeline = []string{wasmrun.StepValidate, wasmrun.StepMemory, wasmrun.StepTables,
	wasmrun.StepInstrument, wasmrun.StepCompile, wasmrun.StepImports, wasmrun.StepEntrypoint}

// validSteps are the steps whose failure fails module_valid.
var validSteps = []string{wasmrun.StepValidate, wasmrun.StepMemory, wasmrun.StepTables, wasmrun.StepCompile}

// inspect records module_valid, module_instrumentable and imports_known
// from wasmrun.Inspect, the latter two only when it reached their step.
// ok is false when the module did not validate: nothing more is known.
func (r *Report) inspect(ctx context.Context, in Input, path string) (wasmrun.Inspection, bool) {
	insp, err := wasmrun.Inspect(ctx, in.Wasm, in.Modules[path], firstExport(in.Entrypoints, path))
	r.Timing.Validate += insp.Validate
	r.Timing.Instrument += insp.Instrument
	r.Timing.Compile += insp.Compile
	var ie *wasmrun.InspectError
	if err != nil && (!errors.As(err, &ie) || ie.Step == wasmrun.StepValidate) {
		r.add("module_valid", path, false, "%v", err)
		return insp, false
	}
	stopped := "" // where Inspect stopped; entrypoints are checked per tool
	if ie != nil && ie.Step != wasmrun.StepEntrypoint {
		stopped = ie.Step
	}
	if slices.Contains(validSteps, stopped) {
		r.add("module_valid", path, false, "%v", err)
	} else {
		r.add("module_valid", path, true, "wazero validates it; its memories and tables are within tier A's limits")
	}
	r.step("module_instrumentable", path, wasmrun.StepInstrument, stopped, err, "instrumented for fuel")
	r.step("imports_known", path, wasmrun.StepImports, stopped, err,
		orElse(insp.HostModules, "imports from ", "imports from no host module"))
	return insp, true
}

// step records the check of one Inspect step: failed with err when
// Inspect stopped there, passed when it went past, not at all when it
// stopped before.
func (r *Report) step(name, path, step, stopped string, err error, passed string) {
	switch {
	case stopped == step:
		r.add(name, path, false, "%v", err)
	case stopped == "" || slices.Index(pipeline, stopped) > slices.Index(pipeline, step):
		r.add(name, path, true, "%s", passed)
	}
}

// firstExport is the export of the first tool that runs path, for
// Inspect; each tool's is checked with CheckEntrypoint.
func firstExport(es []Entrypoint, path string) string {
	for _, e := range es {
		if e.Module == path {
			return e.Export
		}
	}
	return ""
}

// entrypoint checks a tool's export.
func (r *Report) entrypoint(e Entrypoint, insp wasmrun.Inspection) {
	name := e.Export
	if name == "" {
		name = "the default (_start if exported, else run)"
	}
	if err := insp.CheckEntrypoint(e.Export); err != nil {
		r.add("entrypoint_exported", e.Module, false, "tool %s: %v", e.Tool, err)
		return
	}
	r.add("entrypoint_exported", e.Module, true, "tool %s runs %s", e.Tool, name)
}

// wasiModule is the module WASI preview1's functions are imported from.
const wasiModule = "wasi_snapshot_preview1"

// filesystemImports fails a module importing WASI functions that reach
// files by path or list directories: tier A preopens no directory, so a
// skill needing them cannot work as written.
func (r *Report) filesystemImports(path string, insp wasmrun.Inspection, c Capabilities) {
	var names []string
	for _, im := range insp.Imports {
		if im.Module == wasiModule && (strings.HasPrefix(im.Name, "path_") || im.Name == "fd_readdir") {
			names = append(names, im.Name)
		}
	}
	if len(names) == 0 {
		r.add("wasi_filesystem_imports", path, true, "imports no WASI filesystem function")
		return
	}
	if len(names) > 8 {
		names = append(names[:8], fmt.Sprintf("and %d more", len(names)-8))
	}
	why := "the skill declares no filesystem capabilities, and tier A supports none (no preopened directories)"
	if len(c.FilesystemReadRoots)+len(c.FilesystemWriteRoots) > 0 {
		why = "the skill declares filesystem capabilities, which tier A does not support (no preopened directories)"
	}
	r.add("wasi_filesystem_imports", path, false, "imports %s: %s", strings.Join(names, ", "), why)
}

// orElse is prefix and list, or none for an empty list.
func orElse(list []string, prefix, none string) string {
	if len(list) == 0 {
		return none
	}
	return prefix + strings.Join(list, ", ")
}
