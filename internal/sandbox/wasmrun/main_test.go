package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"go.uber.org/goleak"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/testcache"
	"github.com/execledger/execledger/internal/wasm/meter"
	"github.com/execledger/execledger/ledger"
)

// buildDir holds the modules the tests build: WAT files through wat2wasm
// (Debian's wabt) and the Go echo skill through go build.
var buildDir string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wasmrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	buildDir = dir
	wazeroCache = filepath.Join(dir, "wazero-cache")
	if d, ok := testcache.Wazero(); ok {
		wazeroCache = d
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			return 1
		}
	}
	return code
}

// builds holds each module the tests build, built once.
var builds sync.Map // name -> *build

type build struct {
	once sync.Once
	wasm []byte
	err  error
}

// built returns what do built for name, running it once; a failed
// build fails every test that needs it.
func built(tb testing.TB, name string, do func() ([]byte, error)) []byte {
	tb.Helper()
	v, _ := builds.LoadOrStore(name, &build{})
	b := v.(*build)
	b.once.Do(func() { b.wasm, b.err = do() })
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.wasm
}

// wat returns testdata/<name>.wat compiled by wat2wasm. Without wat2wasm
// the test fails: scripts/ensure-test-deps.sh installs it (apt-get install
// wabt).
func wat(tb testing.TB, name string) []byte {
	tb.Helper()
	return built(tb, name+".wat", func() ([]byte, error) {
		tool, err := exec.LookPath("wat2wasm")
		if err != nil {
			return nil, fmt.Errorf("wat2wasm is not installed (apt-get install wabt; scripts/ensure-test-deps.sh does it): %w", err)
		}
		out := filepath.Join(buildDir, name+".wasm")
		if msg, err := exec.Command(tool, filepath.Join("testdata", name+".wat"), "-o", out).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("wat2wasm %s: %w\n%s", name, err, msg)
		}
		return os.ReadFile(out)
	})
}

// echoWasm returns testdata/echo built for GOOS=wasip1 GOARCH=wasm, its
// machine code in cacheDir.
func echoWasm(tb testing.TB) []byte {
	tb.Helper()
	return built(tb, "echo.go", func() ([]byte, error) {
		goTool, err := exec.LookPath("go")
		if err != nil {
			return nil, fmt.Errorf("the go command is needed to build the echo skill: %w", err)
		}
		out := filepath.Join(buildDir, "echo-go.wasm")
		// -trimpath: the bytes, and so wazero's cache key, do not depend
		// on where the repository is checked out.
		cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, "./testdata/echo")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the echo skill: %w\n%s", err, msg)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		// Compile it into cacheDir once, before the tests that use it all
		// compile it at the same time (seconds each under the race
		// detector).
		path := filepath.Join(buildDir, "echo-go-registered.wasm")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
		d := sha256.Sum256(b)
		h, err := newHost(context.Background(), Config{Engine: EngineCompiler, CacheDir: cacheDir(),
			Modules: []Module{{ToolID: "acme.echo", Path: path, SHA256: hex.EncodeToString(d[:])}}}, newMeter())
		if err != nil {
			return nil, err
		}
		return b, h.Close(context.Background())
	})
}

// wazeroCache is the wazero cache the tests share (cacheDir).
var wazeroCache string

// cacheDir is a wazero cache the tests share, so that the Go echo skill
// is compiled to machine code once rather than by every test: kept
// between runs (package testcache), else in buildDir.
func cacheDir() string { return wazeroCache }

// module writes wasm to a file and registers it as tool id.
func module(tb testing.TB, id string, wasm []byte) Module {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), id+".wasm")
	if err := os.WriteFile(path, wasm, 0o600); err != nil {
		tb.Fatal(err)
	}
	d := sha256.Sum256(wasm)
	return Module{ToolID: id, Path: path, SHA256: hex.EncodeToString(d[:])}
}

// host starts a Host on cfg, closed at the end of the test.
func host(tb testing.TB, cfg Config) *Host {
	tb.Helper()
	return hostWith(tb, cfg, newMeter())
}

func hostWith(tb testing.TB, cfg Config, meter fuelMeter) *Host {
	tb.Helper()
	ctx := context.Background()
	h, err := newHost(ctx, cfg, meter)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(ctx) })
	return h
}

// run calls tool name of h with input.
func run(tb testing.TB, h *Host, name, input string) executor.Result {
	tb.Helper()
	return runCtx(tb, context.Background(), h, name, input)
}

func runCtx(tb testing.TB, ctx context.Context, h *Host, name, input string) executor.Result {
	tb.Helper()
	t := h.Tool(name)
	if t == nil {
		tb.Fatalf("no tool %s", name)
	}
	return t.Run(ctx, executor.Call{RequestID: uuid.New(), Attempt: 1, Principal: "tester", Input: json.RawMessage(input)})
}

// pluginInput is plugin.run's input for wasm.
func pluginCall(wasm []byte, entrypoint, input string) string {
	m := map[string]any{"module_base64": base64.StdEncoding.EncodeToString(wasm)}
	if entrypoint != "" {
		m["entrypoint"] = entrypoint
	}
	if input != "" {
		m["input"] = json.RawMessage(input)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// wantKind fails unless res ended with kind and its error holds each of
// parts.
func wantKind(tb testing.TB, res executor.Result, kind ledger.ErrorKind, parts ...string) {
	tb.Helper()
	if res.ErrorKind != kind {
		tb.Fatalf("error kind %q (%s), want %q; output %s", res.ErrorKind, res.Error, kind, res.Output)
	}
	for _, p := range parts {
		if !strings.Contains(res.Error, p) {
			tb.Errorf("error %q does not mention %q", res.Error, p)
		}
	}
}

// wantOutput fails unless res succeeded with output equal (as JSON) to
// want.
func wantOutput(tb testing.TB, res executor.Result, want string) {
	tb.Helper()
	if res.ErrorKind != "" {
		tb.Fatalf("failed: %s: %s; output %s", res.ErrorKind, res.Error, res.Output)
	}
	var got, exp any
	if err := json.Unmarshal(res.Output, &got); err != nil {
		tb.Fatalf("output %s: %v", res.Output, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		tb.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		tb.Fatalf("output %s, want %s", res.Output, want)
	}
}

// globalFuel meters modules that count their own fuel in a global
// exported as meter.FuelExport, such as testdata/fuel_loop.wat, which is
// instrumented by hand: it reads the global as meter.Fuel does and
// instruments nothing, so the module's own initial value is the fuel.
type globalFuel struct{}

func (globalFuel) instrument(wasm []byte, _ int64) ([]byte, error) { return wasm, nil }
func (globalFuel) metered() bool                                   { return true }
func (globalFuel) yields() bool                                    { return false }
func (globalFuel) setFloor(api.Module, int64) error                { return nil }

func (globalFuel) left(mod api.Module) (int64, error) {
	g := mod.ExportedGlobal(meter.FuelExport)
	if g == nil {
		return 0, fmt.Errorf("no %s", meter.FuelExport)
	}
	return int64(g.Get()), nil
}

func (globalFuel) charge(mod api.Module, fuel int64) (bool, error) {
	g, ok := mod.ExportedGlobal(meter.FuelExport).(api.MutableGlobal)
	if !ok {
		return false, fmt.Errorf("no mutable %s", meter.FuelExport)
	}
	left := int64(g.Get()) - fuel
	g.Set(uint64(left))
	return left < 0, nil
}

// testHost is the host module "execledger_test": count() counts calls,
// block() waits until release is closed, recording how many wait at once.
type testHost struct {
	mu      sync.Mutex
	count   int
	inBlock int
	maxIn   int
	release chan struct{}
}

func newTestHost() *testHost { return &testHost{release: make(chan struct{})} }

func (th *testHost) modules(ctx context.Context, rt wazero.Runtime) ([]string, error) {
	_, err := rt.NewHostModuleBuilder("execledger_test").
		NewFunctionBuilder().WithFunc(func(context.Context) {
		th.mu.Lock()
		th.count++
		th.mu.Unlock()
	}).Export("count").
		NewFunctionBuilder().WithFunc(func(ctx context.Context) {
		th.mu.Lock()
		th.inBlock++
		th.maxIn = max(th.maxIn, th.inBlock)
		th.mu.Unlock()
		select {
		case <-th.release:
		case <-ctx.Done():
		}
		th.mu.Lock()
		th.inBlock--
		th.mu.Unlock()
	}).Export("block").
		Instantiate(ctx)
	return []string{"execledger_test"}, err
}

func (th *testHost) counts() (count, inBlock, maxIn int) {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.count, th.inBlock, th.maxIn
}

// eventually polls cond until it holds, failing tb after two minutes: a
// bound for a condition that never comes, not a measure (goroutines
// reach these states in microseconds on a quiet machine, in seconds on a
// loaded one).
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
