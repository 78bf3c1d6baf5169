package meter

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// buildGoProgram builds testdata/goprog with GOOS=wasip1 GOARCH=wasm.
func buildGoProgram(t testing.TB) []byte {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found: %v", err)
	}
	out := filepath.Join(t.TempDir(), "goprog.wasm")
	// -trimpath: the bytes, and so wazero's cache key, do not depend on
	// where the repository is checked out.
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, "main.go")
	cmd.Dir = filepath.Join("testdata", "goprog")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build testdata/goprog: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wasiRun is the outcome of running a WASI command.
type wasiRun struct {
	stdout, stderr string
	exitCode       int64 // -1 when the run ended in a trap
	used           int64 // fuel; 0 when not metered
}

// runWASI runs the command module wasm under WASI preview 1 on engine e;
// with fuel > 0 the module is instrumented and gets that much fuel; with
// y not nil it is instrumented with Yield and y is its yield.
func runWASI(t *testing.T, e engine, wasm []byte, fuel int64, y *yielder) wasiRun {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, e.config())
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if y != nil {
		instantiateYield(t, rt, y)
	}
	var stdout, stderr bytes.Buffer
	// No start functions: _start is called once the fuel is set.
	cfg := wazero.NewModuleConfig().WithStdout(&stdout).WithStderr(&stderr).
		WithArgs("goprog", "one", "two").WithStartFunctions()
	mod, err := rt.InstantiateWithConfig(ctx, wasm, cfg)
	if err != nil {
		t.Fatalf("%s: instantiate: %v", e.name, err)
	}
	if fuel > 0 {
		if err := SetFuel(mod, fuel); err != nil {
			t.Fatal(err)
		}
	}
	if y != nil {
		if err := y.setFloor(mod); err != nil {
			t.Fatal(err)
		}
	}
	_, err = mod.ExportedFunction("_start").Call(ctx)
	out := wasiRun{stdout: stdout.String(), stderr: stderr.String(), exitCode: -1}
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit):
		out.exitCode = int64(exit.ExitCode())
	case err == nil:
		out.exitCode = 0
	}
	if fuel > 0 {
		// The fuel global is still readable after proc_exit closed the
		// instance.
		left, err := Fuel(mod)
		if err != nil {
			t.Fatal(err)
		}
		out.used = fuel - left
	}
	return out
}

func TestGoProgram(t *testing.T) {
	t.Parallel()
	src := buildGoProgram(t)
	wasm := mustInstrument(t, src, Options{})
	yieldWasm := mustInstrument(t, src, Options{Yield: true})
	t.Logf("Go wasip1 module: %d bytes, instrumented %d bytes (+%.1f%%)",
		len(src), len(wasm), 100*float64(len(wasm)-len(src))/float64(len(src)))

	const budget = 1 << 40
	var metered []wasiRun
	for _, e := range engines() {
		orig := runWASI(t, e, src, 0, nil)
		if orig.exitCode != 0 || orig.stdout == "" {
			t.Fatalf("%s: original: exit %d, stdout %q, stderr %q", e.name, orig.exitCode, orig.stdout, orig.stderr)
		}
		got := runWASI(t, e, wasm, budget, nil)
		if got.stdout != orig.stdout || got.stderr != orig.stderr || got.exitCode != orig.exitCode {
			t.Errorf("%s: instrumented run %+v, original %+v", e.name, got, orig)
		}
		metered = append(metered, got)
		t.Logf("%s: fuel used %d", e.name, got.used)
		// With Yield, the host yielding every 1000 units of fuel: the same
		// run and fuel.
		y := &yielder{quantum: 1000}
		if yielded := runWASI(t, e, yieldWasm, budget, y); yielded != got {
			t.Errorf("%s: run with Yield %+v, without %+v", e.name, yielded, got)
		}
		// A charge of more than a quantum (a long segment, a bulk
		// operation, memory.grow) covers several quanta with one call.
		if min := got.used / 10_000; y.calls.Load() < min {
			t.Errorf("%s: yield called %d times in %d fuel, want at least %d", e.name, y.calls.Load(), got.used, min)
		}
	}
	if metered[0].used != metered[1].used || metered[0].used == 0 {
		t.Errorf("fuel used: compiler %d, interpreter %d; want equal", metered[0].used, metered[1].used)
	}

	// With a tenth of that fuel it runs out, at the same point on both
	// engines.
	short := metered[0].used / 10
	var left []int64
	for _, e := range engines() {
		r := runWASI(t, e, wasm, short, nil)
		if r.exitCode != -1 || r.used <= short {
			t.Errorf("%s: with %d fuel: exit %d, used %d; want out of fuel", e.name, short, r.exitCode, r.used)
		}
		left = append(left, r.used)
	}
	if left[0] != left[1] {
		t.Errorf("out of fuel at %d on the compiler, %d on the interpreter", left[0], left[1])
	}
}
