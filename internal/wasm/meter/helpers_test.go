package meter

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/execledger/execledger/internal/testcache"
)

// engine is one of wazero's two engines; every run test uses both.
type engine struct {
	name   string
	config func() wazero.RuntimeConfig
}

func engines() []engine {
	return []engine{
		{"compiler", func() wazero.RuntimeConfig {
			return wazero.NewRuntimeConfigCompiler().WithCompilationCache(compiledCode())
		}},
		{"interpreter", wazero.NewRuntimeConfigInterpreter},
	}
}

// compiledCode is the compiler's cache, shared by the tests and kept
// between runs (package testcache): under the race detector wazero's
// compiler takes minutes over testdata/goprog, which TestGoProgram
// compiles in three forms, and the corpus's modules add up. A hit is
// the code the compile would make.
var compiledCode = sync.OnceValue(func() wazero.CompilationCache {
	if dir, ok := testcache.Wazero(); ok {
		if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
})

// watFiles lists the WebAssembly text sources in testdata.
func watFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.wat"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.wat: %v", err)
	}
	return files
}

// compileWAT turns testdata/<name>.wat into a binary module with wat2wasm
// (package wabt, which scripts/ensure-test-deps.sh installs). A missing
// wat2wasm fails the test: it is never skipped. A first line
// ";; wat2wasm: <flags>" gives the file's wat2wasm flags.
func compileWAT(t testing.TB, name string) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm not found (apt-get install wabt, or run scripts/ensure-test-deps.sh): %v", err)
	}
	src := filepath.Join("testdata", name+".wat")
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(text), "\n")
	flags, _ := strings.CutPrefix(first, ";; wat2wasm:")
	if flags == first {
		flags = ""
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	args := append(strings.Fields(flags), src, "-o", out)
	cmd := exec.Command(tool, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm %s: %v\n%s", name, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustInstrument instruments wasm with opts and fails the test on error.
func mustInstrument(t testing.TB, wasm []byte, opts Options) []byte {
	t.Helper()
	out, err := Instrument(wasm, opts)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	return out
}

// instantiate compiles and instantiates wasm on a fresh runtime of engine
// e, closed when the test ends.
func instantiate(t testing.TB, e engine, wasm []byte) api.Module {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, e.config())
	t.Cleanup(func() { rt.Close(context.WithoutCancel(ctx)) })
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatalf("%s: instantiate: %v", e.name, err)
	}
	return mod
}

// tryInstantiate instantiates wasm on a fresh runtime, closed before it
// returns, and reports the error.
func tryInstantiate(e engine, wasm []byte) error {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, e.config())
	defer rt.Close(ctx)
	_, err := rt.Instantiate(ctx, wasm)
	return err
}

// run calls fn with fuel and returns its results, the fuel it used and the
// call's error.
func run(t testing.TB, mod api.Module, fuel int64, fn string, args ...uint64) ([]uint64, int64, error) {
	t.Helper()
	if err := SetFuel(mod, fuel); err != nil {
		t.Fatal(err)
	}
	f := mod.ExportedFunction(fn)
	if f == nil {
		t.Fatalf("no export %q", fn)
	}
	res, err := f.Call(context.Background(), args...)
	left, ferr := Fuel(mod)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return res, fuel - left, err
}

// mustRun is run for a call that must succeed.
func mustRun(t testing.TB, mod api.Module, fuel int64, fn string, args ...uint64) ([]uint64, int64) {
	t.Helper()
	res, used, err := run(t, mod, fuel, fn, args...)
	if err != nil {
		t.Fatalf("%s%v: %v", fn, args, err)
	}
	return res, used
}
