package wasmrun

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// inspected imports WASI and a capability host module, the latter
// twice, and exports two functions, a memory and a global.
const inspected = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "storage-handle" (func (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "storage-handle" (func $again (param i32) (result i32)))
  (memory (export "memory") 1)
  (global (export "g") i32 (i32.const 1))
  (func (export "put") (result i32) (i32.const 0))
  (func (export "_start")))`

func TestInspect(t *testing.T) {
	t.Parallel()
	wasm := watText(t, inspected)
	in, err := Inspect(context.Background(), Config{}, wasm, "put")
	if err != nil {
		t.Fatal(err)
	}
	if in.Size != len(wasm) || !slices.Equal(in.Exports, []string{"_start", "put"}) || in.ExportCount != 4 {
		t.Errorf("size %d, exports %v (%d in all)", in.Size, in.Exports, in.ExportCount)
	}
	want := []Import{{"palyra:plugins/host-capabilities@0.1.0", "storage-handle"}, {"wasi_snapshot_preview1", "fd_write"}}
	if !slices.Equal(in.Imports, want) {
		t.Errorf("imports %v, want %v", in.Imports, want)
	}
	if !slices.Equal(in.HostModules, []string{"palyra:plugins/host-capabilities@0.1.0", "wasi_snapshot_preview1"}) {
		t.Errorf("host modules %v", in.HostModules)
	}
	if !strings.HasPrefix(in.InstrumentedDigest, "sha256:") || in.InstrumentedDigest == sha256Digest(wasm) {
		t.Errorf("instrumented digest %q", in.InstrumentedDigest)
	}
	if in.Validate <= 0 || in.Instrument <= 0 || in.Compile <= 0 {
		t.Errorf("timings %v %v %v", in.Validate, in.Instrument, in.Compile)
	}
	if err := in.CheckEntrypoint(""); err != nil {
		t.Errorf("the default entrypoint of another tool: %v", err)
	}
	if in, err := Inspect(context.Background(), Config{}, wat(t, "answer"), ""); err != nil || !slices.Equal(in.Exports, []string{"run"}) {
		t.Errorf("the default entrypoint: %v, exports %v", err, in.Exports)
	}
	in, _ = Inspect(context.Background(), Config{}, watText(t, "(module)"), "") // fails at its entrypoint
	if err := in.CheckEntrypoint(""); err == nil || !strings.Contains(err.Error(), `no function "run"`) {
		t.Errorf("a module that exports nothing: %v", err)
	}
}

// TestInspectSteps holds each failure to its step, and to the words New
// uses for it.
func TestInspectSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, entry, step, words string
		wasm                     []byte
		cfg                      Config
	}{
		{name: "over MaxModuleBytes", wasm: wat(t, "answer"), cfg: Config{MaxModuleBytes: 8}, step: StepSize,
			words: "bytes; the limit is 8"},
		{name: "not WebAssembly", wasm: []byte("\x00asm\x01\x00\x00\x00\xff"), step: StepValidate, words: "malformed"},
		{name: "memory above the limit", wasm: wat(t, "big_memory"), step: StepMemory, words: "starts at 2000 pages"},
		{name: "table above the limit", wasm: wat(t, "big_table"), step: StepTables, words: "200000 elements"},
		{name: "a reserved name", wasm: watText(t, `(module (func (export "__execledger_x")) (func (export "run") (result i32) (i32.const 0)))`),
			step: StepInstrument, words: "reserved name"},
		{name: "unknown import", wasm: wat(t, "unknown_import"), step: StepImports, words: "function env.launch_missiles"},
		{name: "a WASI socket", wasm: wat(t, "sock_accept"), step: StepImports,
			words: "function wasi_snapshot_preview1.sock_accept (WASI sockets: no capability grants raw sockets"},
		{name: "missing entrypoint", wasm: wat(t, "answer"), entry: "nope", step: StepEntrypoint, words: `no function "nope"`},
		{name: "entrypoint's type", wasm: wat(t, "wrong_entry"), step: StepEntrypoint, words: "has type (i32) -> (i32)"},
	} {
		_, err := Inspect(context.Background(), tc.cfg, tc.wasm, tc.entry)
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Step != tc.step || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%s: %v (step %+v), want step %s saying %q", tc.name, err, ie, tc.step, tc.words)
			continue
		}
		if tc.step == StepSize { // New refuses the file before reading it
			continue
		}
		m := module(t, "acme.x", tc.wasm)
		m.Entrypoint = tc.entry
		if _, nerr := New(context.Background(), Config{Modules: []Module{m}}); nerr == nil || !strings.HasSuffix(nerr.Error(), ": "+err.Error()) {
			t.Errorf("%s: Inspect says %q, New %v", tc.name, err, nerr)
		}
	}
}

// TestInspectAfterValidation: a module that validates but fails a later
// step still reports its exports and imports.
func TestInspectAfterValidation(t *testing.T) {
	t.Parallel()
	in, err := Inspect(context.Background(), Config{}, wat(t, "unknown_import"), "")
	if err == nil || !slices.Contains(in.Imports, Import{"env", "launch_missiles"}) || in.CheckEntrypoint("run") != nil {
		t.Errorf("%v: imports %v, exports %v", err, in.Imports, in.Exports)
	}
	in, err = Inspect(context.Background(), Config{}, []byte("not wasm"), "")
	if err == nil || in.Exports != nil || in.CheckEntrypoint("run") == nil {
		t.Errorf("%v: exports %v", err, in.Exports)
	}
}

// TestInspectCompilesIntoCacheDir: Inspect with a CacheDir leaves the
// instrumented module's machine code there, and a host on that directory
// registering the module with the same fuel compiles nothing again; with
// other fuel (other instrumented bytes) it does.
func TestInspectCompilesIntoCacheDir(t *testing.T) {
	t.Parallel()
	if !compilerSupported() {
		t.Fatal("wazero's compiler does not support this platform; only its code is cached")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	wasm := wat(t, "answer")
	if _, err := Inspect(context.Background(), Config{Engine: EngineCompiler, CacheDir: dir}, wasm, ""); err != nil {
		t.Fatal(err)
	}
	inspected := cacheEntries(t, dir)
	if len(inspected) != 1 {
		t.Fatalf("cache entries after Inspect: %v, want one", inspected)
	}
	mod := module(t, "acme.answer", wasm)
	h := host(t, Config{Engine: EngineCompiler, CacheDir: dir, Modules: []Module{mod}})
	wantOutput(t, run(t, h, "acme.answer", `{}`), `{"result": 42}`)
	if got := cacheEntries(t, dir); !maps.Equal(got, inspected) {
		t.Errorf("the host compiled the inspected module again: cache entries %v, then %v", inspected, got)
	}
	mod.FuelLimit = DefaultFuelLimit / 2
	host(t, Config{Engine: EngineCompiler, CacheDir: dir, Modules: []Module{mod}})
	if got := cacheEntries(t, dir); len(got) != 2 {
		t.Errorf("cache entries after a host with other fuel: %v, want two", got)
	}
}
