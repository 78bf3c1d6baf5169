package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/redact"

	"github.com/execledger/execledger/ledger"
)

func TestEchoSkillRoundTripsJSON(t *testing.T) {
	t.Parallel()
	h := host(t, Config{Modules: []Module{module(t, "acme.echo", echoWasm(t))}, CacheDir: cacheDir()})
	tool := h.Tool("acme.echo")
	if tool.Name() != "acme.echo" || tool.Executor() != "sandbox_tier_a" || tool.Tier() != "A" || !tool.SafeToRepeat() {
		t.Fatalf("tool %s %s %s %v", tool.Name(), tool.Executor(), tool.Tier(), tool.SafeToRepeat())
	}
	in := `{"greeting": "héllo", "n": [1, 2.5, null, true], "nested": {"a": "b"}}`
	res := run(t, h, "acme.echo", in)
	if res.ErrorKind != "" {
		t.Fatalf("%s: %s; %s", res.ErrorKind, res.Error, res.Output)
	}
	var out struct {
		Input   map[string]any `json:"input"`
		Args    []string       `json:"args"`
		Environ []string       `json:"environ"`
		Now     string         `json:"now"`
		Random  uint64         `json:"random"`
		FSError string         `json:"fs_error"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	var want map[string]any
	json.Unmarshal([]byte(in), &want)
	if fmt.Sprint(out.Input) != fmt.Sprint(want) {
		t.Errorf("input came back as %v, want %v", out.Input, want)
	}
	if fmt.Sprint(out.Args) != "[acme.echo]" || len(out.Environ) != 0 {
		t.Errorf("args %v, environ %v; want [acme.echo] and none", out.Args, out.Environ)
	}
	if out.FSError == "" {
		t.Error("the skill could read /etc/passwd")
	}
	if !strings.HasPrefix(out.Now, "2024-01-01T00:00:") {
		t.Errorf("the skill's clock says %s, not the fixed epoch", out.Now)
	}

	// The same input sees the same clock and random bytes; another input
	// other random bytes.
	again := run(t, h, "acme.echo", in)
	if string(again.Output) != string(res.Output) {
		t.Errorf("not deterministic:\n%s\n%s", res.Output, again.Output)
	}
	other := run(t, h, "acme.echo", `{"greeting": "bye"}`)
	var o2 struct{ Random uint64 }
	json.Unmarshal(other.Output, &o2)
	if o2.Random == out.Random {
		t.Errorf("two inputs drew the same random number %d", o2.Random)
	}

	for _, k := range []string{"wall_ms", "memory_pages_peak", "module_bytes", "output_bytes"} {
		if _, ok := res.Resources[k]; !ok {
			t.Errorf("resources lack %s: %v", k, res.Resources)
		}
	}
	if res.Resources["memory_pages_peak"] <= 0 || res.Resources["module_bytes"] != int64(len(echoWasm(t))) {
		t.Errorf("resources %v", res.Resources)
	}
	enf := res.Enforcement
	if enf["engine"] != tool.Engine() || enf["memory_limit_pages"] != uint32(1024) || enf["max_instances"] != 256 ||
		enf["abi"] != abiCommand || enf["entrypoint"] != "_start" || enf["module_digest"] != "sha256:"+module(t, "x.y", echoWasm(t)).SHA256 {
		t.Errorf("enforcement %v", enf)
	}
	wasi, _ := enf["wasi"].(map[string]any)
	if wasi["preopens"] != "none" || wasi["clock"] != "fixed" || wasi["random"] != "seeded" || wasi["network"] != "none" {
		t.Errorf("wasi enforcement %v", wasi)
	}
}

func TestEchoSkillEnvironmentAndSleep(t *testing.T) {
	t.Parallel()
	m := module(t, "acme.echo", echoWasm(t))
	m.Env = map[string]string{"GREETING": "hi", "A": "1"}
	h := host(t, Config{Modules: []Module{m}, CacheDir: cacheDir()})
	res := run(t, h, "acme.echo", `{"sleep_ms": 5000}`)
	var out struct {
		Environ []string `json:"environ"`
		SleptMS int64    `json:"slept_ms"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || res.ErrorKind != "" {
		t.Fatalf("%s %s %s", res.ErrorKind, res.Error, res.Output)
	}
	if fmt.Sprint(out.Environ) != "[A=1 GREETING=hi]" {
		t.Errorf("environ %v", out.Environ)
	}
	// Sleeping moves the skill's clock, not the host's.
	if out.SleptMS < 5000 || res.Resources["wall_ms"] > 4000 {
		t.Errorf("slept %d ms by its clock in %d ms", out.SleptMS, res.Resources["wall_ms"])
	}
}

func TestEchoSkillFailures(t *testing.T) {
	t.Parallel()
	red := redact.New(redact.Options{})
	h := host(t, Config{Modules: []Module{module(t, "acme.echo", echoWasm(t))}, Redactor: red,
		OutputLimit: 1 << 10, MemoryLimitPages: 256, CacheDir: cacheDir()})
	t.Run("exit code", func(t *testing.T) {
		res := run(t, h, "acme.echo", `{"exit": 3, "stderr": "it went wrong password=hunter22"}`)
		wantKind(t, res, ledger.KindRuntimeFailure, "exited with code 3", "it went wrong")
		if strings.Contains(res.Error, "hunter22") || strings.Contains(string(res.Output), "hunter22") {
			t.Errorf("stderr not redacted: %s / %s", res.Error, res.Output)
		}
		var out map[string]any
		json.Unmarshal(res.Output, &out)
		if out["exit_code"] != float64(3) || !strings.Contains(fmt.Sprint(out["stderr"]), "it went wrong") {
			t.Errorf("output %s", res.Output)
		}
	})
	t.Run("panic", func(t *testing.T) {
		res := run(t, h, "acme.echo", `{"panic": "boom"}`)
		wantKind(t, res, ledger.KindRuntimeFailure, "exited with code 2", "panic: boom")
	})
	t.Run("not an object", func(t *testing.T) {
		res := run(t, h, "acme.echo", `{"raw": "[1, 2]"}`)
		wantKind(t, res, ledger.KindRuntimeFailure, "not a JSON object")
		res = run(t, h, "acme.echo", `{"raw": "{\"a\": 1} trailing"}`)
		wantKind(t, res, ledger.KindRuntimeFailure, "not a JSON object")
	})
	t.Run("output too large", func(t *testing.T) {
		res := run(t, h, "acme.echo", fmt.Sprintf(`{"raw": "{\"a\": \"%s\"}"}`, strings.Repeat("x", 2000)))
		wantKind(t, res, ledger.KindQuotaExceeded, "output is 2009 bytes; the limit is 1024")
	})
	t.Run("out of memory", func(t *testing.T) {
		res := run(t, h, "acme.echo", `{"alloc_mb": 64}`)
		wantKind(t, res, ledger.KindQuotaExceeded, "memory limit reached: 256 pages")
		if p := res.Resources["memory_pages_peak"]; p > 256 || p == 0 {
			t.Errorf("memory_pages_peak %d", p)
		}
	})
	t.Run("input not an object", func(t *testing.T) {
		if _, err := h.Tool("acme.echo").Prepare(context.Background(), executor.Call{Input: json.RawMessage(`[1]`)}); err == nil {
			t.Error("Prepare took an array")
		}
		wantKind(t, run(t, h, "acme.echo", `"x"`), ledger.KindInvalidInput, "not a JSON object")
	})
}

func TestResultABI(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true, Modules: []Module{
		module(t, "acme.answer", wat(t, "answer")),
		module(t, "acme.big", wat(t, "answer64")),
		module(t, "acme.reactor", wat(t, "reactor")),
	}})
	wantOutput(t, run(t, h, "acme.answer", `{}`), `{"result": 42}`)
	wantOutput(t, run(t, h, "acme.big", `{}`), `{"result": -5000000000}`)
	wantOutput(t, run(t, h, "acme.reactor", `{}`), `{"result": 9}`)
	res := run(t, h, PluginTool, pluginCall(wat(t, "answer"), "", ""))
	wantOutput(t, res, `{"result": 42}`)
	if res.Enforcement["abi"] != abiResult || res.Enforcement["entrypoint"] != "run" {
		t.Errorf("enforcement %v", res.Enforcement)
	}
}

func TestCommandOutputMustBeAnObject(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true})
	res := run(t, h, PluginTool, pluginCall(wat(t, "stdout"), "", ""))
	wantKind(t, res, ledger.KindRuntimeFailure, `output is not a JSON object: "not json"`)
	if res.Enforcement["abi"] != abiCommand || fmt.Sprint(res.Enforcement["host_modules"]) != "[wasi_snapshot_preview1]" {
		t.Errorf("enforcement %v", res.Enforcement)
	}
}

func TestEntrypoints(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true})
	wantOutput(t, run(t, h, PluginTool, pluginCall(wat(t, "grow"), "handled", "")), `{"result": -1}`)
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "answer"), "missing", "")), ledger.KindInvalidInput, `no function "missing"`)
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "wrong_entry"), "", "")), ledger.KindInvalidInput, `entrypoint "run" has type (i32) -> (i32)`)
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "exit"), "", "")), ledger.KindRuntimeFailure, "exited without returning a result")
	_, err := New(context.Background(), Config{Modules: []Module{module(t, "acme.wrong", wat(t, "wrong_entry"))}})
	if err == nil || !strings.Contains(err.Error(), "acme.wrong") {
		t.Errorf("New took a module without a usable entrypoint: %v", err)
	}
}

func TestInfiniteLoopTimesOutWithoutFuel(t *testing.T) {
	t.Parallel()
	m := module(t, "acme.loop", wat(t, "loop"))
	m.Timeout = 200 * time.Millisecond
	h := hostWith(t, Config{Modules: []Module{m}}, unmetered{})
	res := run(t, h, "acme.loop", `{}`)
	wantKind(t, res, ledger.KindTimedOut)
	if !res.TimedOut || res.Resources["wall_ms"] < 200 {
		t.Errorf("TimedOut %v after %d ms", res.TimedOut, res.Resources["wall_ms"])
	}
	if res.Enforcement["timeout_ms"] != int64(200) {
		t.Errorf("enforcement %v", res.Enforcement)
	}
	// The executor's deadline counts too.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	wantKind(t, runCtx(t, ctx, h, "acme.loop", `{}`), ledger.KindTimedOut)
}

func TestInfiniteLoopRunsOutOfFuel(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		m := module(t, "acme.loop", wat(t, "loop"))
		m.FuelLimit = 1_000_000
		h := host(t, Config{Engine: engine, Modules: []Module{m}})
		res := run(t, h, "acme.loop", `{}`)
		wantKind(t, res, ledger.KindQuotaExceeded, "out of fuel: the limit is 1000000")
		if res.Resources["fuel_used"] != 1_000_000 || res.Resources["fuel_limit"] != 1_000_000 ||
			res.Enforcement["fuel_limit"] != int64(1_000_000) || res.Enforcement["instrumented_digest"] == nil {
			t.Errorf("%s: resources %v, enforcement %v", engine, res.Resources, res.Enforcement)
		}
	}
}

// TestFuelIsDeterministic: the same call uses the same fuel, on either
// engine.
func TestFuelIsDeterministic(t *testing.T) {
	t.Parallel()
	mods := []Module{module(t, "acme.echo", echoWasm(t))}
	var used []int64
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		h := host(t, Config{Engine: engine, Modules: mods, CacheDir: cacheDir()})
		for range 2 {
			res := run(t, h, "acme.echo", `{"a": "b"}`)
			if res.ErrorKind != "" {
				t.Fatalf("%s: %s", res.ErrorKind, res.Error)
			}
			used = append(used, res.Resources["fuel_used"])
		}
	}
	if used[0] <= 0 || used[0] >= DefaultFuelLimit || used[1] != used[0] || used[2] != used[0] || used[3] != used[0] {
		t.Fatalf("fuel used %v", used)
	}
	t.Logf("the echo skill used %d fuel", used[0])
}

func TestCancelledCall(t *testing.T) {
	t.Parallel()
	h := hostWith(t, Config{Modules: []Module{module(t, "acme.loop", wat(t, "loop"))}}, unmetered{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	wantKind(t, runCtx(t, ctx, h, "acme.loop", `{}`), ledger.KindCancelled)
}

// TestOutOfFuel classifies fuel running out, with a module that counts
// its fuel by hand (globalFuel), and records what a call used.
func TestOutOfFuel(t *testing.T) {
	t.Parallel()
	forever, finite := module(t, "acme.fuel", wat(t, "fuel_loop")), module(t, "acme.finite", wat(t, "fuel_loop"))
	finite.Entrypoint = "finite"
	forever.FuelLimit, finite.FuelLimit = 5000, 5000 // as the module starts with
	h := hostWith(t, Config{Modules: []Module{forever, finite}}, globalFuel{})
	res := run(t, h, "acme.fuel", `{}`)
	wantKind(t, res, ledger.KindQuotaExceeded, "out of fuel")
	if res.Resources["fuel_used"] != 5000 || res.Resources["fuel_limit"] != 5000 || res.Enforcement["fuel_limit"] != int64(5000) {
		t.Errorf("resources %v, enforcement fuel_limit %v", res.Resources, res.Enforcement["fuel_limit"])
	}
	res = run(t, h, "acme.finite", `{}`)
	wantOutput(t, res, `{"result": 7}`)
	if res.Resources["fuel_used"] != 1000 {
		t.Errorf("resources %v", res.Resources)
	}
}

// TestUnmeteredRecordsIt checks that a call without a meter does not
// claim a fuel limit.
func TestUnmeteredRecordsIt(t *testing.T) {
	t.Parallel()
	h := hostWith(t, Config{AllowInline: true}, unmetered{})
	res := run(t, h, PluginTool, pluginCall(wat(t, "answer"), "", ""))
	if res.Enforcement["fuel_limit"] != 0 || !strings.HasPrefix(fmt.Sprint(res.Enforcement["fuel"]), "unmetered") {
		t.Errorf("enforcement %v", res.Enforcement)
	}
	if _, ok := res.Resources["fuel_used"]; ok {
		t.Errorf("resources %v", res.Resources)
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true})
	grow := wat(t, "grow")
	res := run(t, h, PluginTool, pluginCall(grow, "", ""))
	wantKind(t, res, ledger.KindQuotaExceeded, "memory limit reached: 1024 pages (64 MiB)")
	if res.Resources["memory_pages_peak"] != 1024 {
		t.Errorf("memory_pages_peak %d", res.Resources["memory_pages_peak"])
	}
	res = run(t, h, PluginTool, pluginCall(grow, "once", ""))
	wantKind(t, res, ledger.KindQuotaExceeded, "memory limit reached")
	if res.Resources["memory_pages_peak"] != 1 {
		t.Errorf("memory_pages_peak %d", res.Resources["memory_pages_peak"])
	}
	// A module that handles the refusal succeeds.
	wantOutput(t, run(t, h, PluginTool, pluginCall(grow, "handled", "")), `{"result": -1}`)
	// A declared maximum above the limit is allowed; growth stops at the
	// limit.
	wantOutput(t, run(t, h, PluginTool, pluginCall(wat(t, "grow_declared"), "", "")), `{"result": -1}`)
	// A memory starting above the limit never runs.
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "big_memory"), "", "")), ledger.KindQuotaExceeded, "starts at 2000 pages; the limit is 1024")
	_, err := New(context.Background(), Config{Modules: []Module{module(t, "acme.big", wat(t, "big_memory"))}})
	if err == nil || !strings.Contains(err.Error(), "starts at 2000 pages") {
		t.Errorf("New: %v", err)
	}
}

func TestTableLimit(t *testing.T) {
	t.Parallel()
	tg := wat(t, "table_grow")
	// Metered, growing by 2^31 elements costs 2^31 fuel.
	h := host(t, Config{AllowInline: true})
	wantKind(t, run(t, h, PluginTool, pluginCall(tg, "", "")), ledger.KindQuotaExceeded, "out of fuel")
	wantOutput(t, run(t, h, PluginTool, pluginCall(tg, "small", "")), `{"result": 1}`)
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "big_table"), "", "")), ledger.KindQuotaExceeded, "200000 elements; the limit is 100000")
	// Unmetered (or with fuel to spare), the table limit refuses it.
	h = hostWith(t, Config{AllowInline: true}, unmetered{})
	wantOutput(t, run(t, h, PluginTool, pluginCall(tg, "", "")), `{"result": -1}`)
	wantOutput(t, run(t, h, PluginTool, pluginCall(tg, "small", "")), `{"result": 1}`)
}

func TestTrapIsRuntimeFailure(t *testing.T) {
	t.Parallel()
	h := host(t, Config{Modules: []Module{module(t, "acme.trap", wat(t, "trap"))}, AllowInline: true})
	res := run(t, h, "acme.trap", `{}`)
	wantKind(t, res, ledger.KindRuntimeFailure, "trap: wasm error: integer divide by zero")
	var out map[string]string
	json.Unmarshal(res.Output, &out)
	if !strings.Contains(out["trap"], "wasm stack trace") {
		t.Errorf("output %s", res.Output)
	}
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "trap"), "unreachable", "")), ledger.KindRuntimeFailure, "trap: wasm error: unreachable")
}

func TestUngrantedImportsRefusedBeforeRunning(t *testing.T) {
	t.Parallel()
	th := newTestHost()
	cfg := Config{AllowInline: true, hostModules: th.modules}
	h := host(t, cfg)
	res := run(t, h, PluginTool, pluginCall(wat(t, "unknown_import"), "", ""))
	wantKind(t, res, ledger.KindInvalidInput, "function env.launch_missiles")
	if n, _, _ := th.counts(); n != 0 {
		t.Errorf("the module's start function ran %d times", n)
	}
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "import_memory"), "", "")), ledger.KindInvalidInput, "memory env.memory")
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "bad_wasi_type"), "", "")), ledger.KindInvalidInput,
		"function wasi_snapshot_preview1.proc_exit with type (i64) -> () (the host's is (i32) -> ())")

	// Without the tests' host module, importing it is refused too.
	wantKind(t, run(t, host(t, Config{AllowInline: true}), PluginTool, pluginCall(wat(t, "count"), "", "")),
		ledger.KindInvalidInput, "function execledger_test.count")

	cfg.Modules = []Module{module(t, "acme.missiles", wat(t, "unknown_import"))}
	_, err := newHost(context.Background(), cfg, newMeter())
	if err == nil || !strings.Contains(err.Error(), "acme.missiles") || !strings.Contains(err.Error(), "env.launch_missiles") {
		t.Errorf("New: %v", err)
	}
}

// TestSocketImportsRefused: WASI's socket functions are not among what
// tier A provides, whatever the capabilities: a module importing one is
// refused at registration, as a skill's tool and by plugin.run, naming
// each and saying that no capability grants raw sockets — before its
// calls could reach them (they got EBADF from wazero).
func TestSocketImportsRefused(t *testing.T) {
	t.Parallel()
	const why = "no capability grants raw sockets"
	web := Capabilities{HTTPHosts: []string{"api.example.com"}}
	accept := wat(t, "sock_accept")

	m := module(t, "acme.listen", accept)
	m.Capabilities = web
	_, err := New(context.Background(), Config{Modules: []Module{m}, Policy: web})
	if err == nil || !strings.Contains(err.Error(), "acme.listen") ||
		!strings.Contains(err.Error(), "function wasi_snapshot_preview1.sock_accept") || !strings.Contains(err.Error(), why) {
		t.Errorf("New with a module importing sock_accept: %v", err)
	}

	h := host(t, Config{AllowInline: true, Policy: web})
	sum := sha256.Sum256(accept)
	_, err = h.SkillTool(context.Background(), Module{ToolID: "acme.listen", SHA256: hex.EncodeToString(sum[:]), Capabilities: web}, accept)
	if err == nil || !strings.Contains(err.Error(), "function wasi_snapshot_preview1.sock_accept") || !strings.Contains(err.Error(), why) {
		t.Errorf("SkillTool with a module importing sock_accept: %v", err)
	}

	res := run(t, h, PluginTool, pluginCall(wat(t, "sockets"), "", ""))
	wantKind(t, res, ledger.KindInvalidInput, why)
	for _, fn := range []string{"sock_accept", "sock_recv", "sock_send", "sock_shutdown"} {
		if !strings.Contains(res.Error, "function wasi_snapshot_preview1."+fn) {
			t.Errorf("the refusal does not name %s: %s", fn, res.Error)
		}
	}
	if strings.Contains(res.Error, "fd_write") {
		t.Errorf("the refusal names fd_write, which tier A provides: %s", res.Error)
	}

	// The other WASI functions stay: a module writing to stdout registers
	// and runs.
	m = module(t, "acme.stdout", wat(t, "stdout"))
	if _, err := New(context.Background(), Config{Modules: []Module{m}}); err != nil {
		t.Errorf("New with a module importing fd_write: %v", err)
	}
}

func TestDigestMismatchRefusesTool(t *testing.T) {
	t.Parallel()
	m := module(t, "acme.answer", wat(t, "answer"))
	m.SHA256 = strings.Repeat("ab", 32)
	_, err := New(context.Background(), Config{Modules: []Module{m}})
	if err == nil || !strings.Contains(err.Error(), "not the pinned "+m.SHA256) {
		t.Fatalf("New: %v", err)
	}
	// The file changed after it was pinned.
	m = module(t, "acme.answer", wat(t, "answer"))
	if err := os.WriteFile(m.Path, wat(t, "trap"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Config{Modules: []Module{m}}); err == nil {
		t.Fatal("New took a changed file")
	}
}

func TestConfigChecks(t *testing.T) {
	t.Parallel()
	good := module(t, "acme.answer", wat(t, "answer"))
	for name, mod := range map[string]func(*Config){
		"engine":        func(c *Config) { c.Engine = "jit" },
		"tool id":       func(c *Config) { c.Modules[0].ToolID = "Hello" },
		"relative path": func(c *Config) { c.Modules[0].Path = "answer.wasm" },
		"digest":        func(c *Config) { c.Modules[0].SHA256 = "xyz" },
		"upper digest":  func(c *Config) { c.Modules[0].SHA256 = strings.ToUpper(c.Modules[0].SHA256) },
		"twice":         func(c *Config) { c.Modules = append(c.Modules, c.Modules[0]) },
		"plugin.run":    func(c *Config) { c.Modules[0].ToolID = PluginTool; c.AllowInline = true },
		"memory":        func(c *Config) { c.MemoryLimitPages = 70000 },
		"missing file":  func(c *Config) { c.Modules[0].Path = "/nonexistent/x.wasm" },
	} {
		cfg := Config{Modules: []Module{good}}
		mod(&cfg)
		if h, err := New(context.Background(), cfg); err == nil {
			h.Close(context.Background())
			t.Errorf("%s: New took it", name)
		}
	}
}

func TestCacheDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	m := module(t, "acme.answer", wat(t, "answer"))
	for range 2 { // the second host loads what the first compiled
		h := host(t, Config{Modules: []Module{m}, CacheDir: dir})
		wantOutput(t, run(t, h, "acme.answer", `{}`), `{"result": 42}`)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir: %v %v", fi.Mode(), err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Config{Modules: []Module{m}, CacheDir: dir}); err == nil || !strings.Contains(err.Error(), "only its owner may write") {
		t.Fatalf("New took a world-writable cache dir: %v", err)
	}
}

func TestInlineOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	h := host(t, Config{Modules: []Module{module(t, "acme.answer", wat(t, "answer"))}})
	if h.Tool(PluginTool) != nil || len(h.Tools()) != 1 {
		t.Fatalf("tools %v", h.Tools())
	}
	h = host(t, Config{AllowInline: true})
	if h.Tool(PluginTool) == nil {
		t.Fatal("no plugin.run")
	}
}

func TestPluginInputValidation(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true, MaxModuleBytes: 64})
	tool := h.Tool(PluginTool)
	big := make([]byte, 100)
	copy(big, wasmMagic)
	for name, in := range map[string]string{
		"unknown field":   `{"module_base64": "AGFzbQEAAAA=", "extra": 1}`,
		"no module":       `{"input": {}}`,
		"bad base64":      `{"module_base64": "!!!"}`,
		"not wasm":        `{"module_base64": "aGVsbG8="}`,
		"input not obj":   `{"module_base64": "AGFzbQEAAAA=", "input": [1]}`,
		"trailing":        `{"module_base64": "AGFzbQEAAAA="} {}`,
		"too large":       pluginCall(big, "", ""),
		"long entrypoint": pluginCall(wasmMagic, strings.Repeat("x", 300), ""),
	} {
		if _, err := tool.Prepare(context.Background(), executor.Call{Input: json.RawMessage(in)}); err == nil || !strings.HasPrefix(err.Error(), "plugin.run: ") {
			t.Errorf("%s: Prepare: %v", name, err)
		}
		wantKind(t, run(t, h, PluginTool, in), ledger.KindInvalidInput)
	}
	res := run(t, h, PluginTool, pluginCall(big, "", ""))
	wantKind(t, res, ledger.KindInvalidInput, "module is about 102 bytes; the limit is 64")
	if _, err := tool.Prepare(context.Background(), executor.Call{Input: json.RawMessage(pluginCall(wat(t, "answer"), "", `{"a": 1}`))}); err != nil {
		t.Errorf("Prepare: %v", err)
	}
	// A module that does not compile.
	wantKind(t, run(t, h, PluginTool, pluginCall(append(append([]byte{}, wasmMagic...), 0x01, 0x05, 0x01), "", "")),
		ledger.KindInvalidInput, "malformed WebAssembly binary: section 1 at offset 8 runs past the end")
	wantKind(t, run(t, h, PluginTool, pluginCall(append(append([]byte{}, wasmMagic...), 0x01, 0x01, 0x01), "", "")),
		ledger.KindInvalidInput, "malformed")
}

func TestModuleSizeCap(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{MaxModuleBytes: 1 << 20, Modules: []Module{module(t, "acme.echo", echoWasm(t))}})
	if err == nil || !strings.Contains(err.Error(), "of at most 1048576 bytes") {
		t.Fatalf("New: %v", err)
	}
	h := host(t, Config{AllowInline: true, MaxModuleBytes: 32})
	wantKind(t, run(t, h, PluginTool, pluginCall(wat(t, "grow"), "", "")), ledger.KindInvalidInput, "the limit is 32")
}

func TestEachModuleCompiledOnce(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true, Modules: []Module{module(t, "acme.answer", wat(t, "answer"))}})
	reg, plug := h.Tool("acme.answer"), h.Tool(PluginTool)
	in := pluginCall(wat(t, "answer"), "", "")
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if res := run(t, h, "acme.answer", `{}`); res.ErrorKind != "" {
				t.Error(res.Error)
			}
			if res := run(t, h, PluginTool, in); res.ErrorKind != "" {
				t.Error(res.Error)
			}
		})
	}
	wg.Wait()
	if r, p := reg.run.compiles.Load(), plug.run.compiles.Load(); r != 1 || p != 1 {
		t.Fatalf("compiled %d and %d times, want once each", r, p)
	}
	// A failure is remembered too.
	bad := pluginCall(wat(t, "unknown_import"), "", "")
	for range 3 {
		wantKind(t, run(t, h, PluginTool, bad), ledger.KindInvalidInput)
	}
	if n := plug.run.compiles.Load(); n != 2 {
		t.Fatalf("compiled %d times", n)
	}
}

func TestInlineCacheEvicts(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true, InlineCacheSize: 2})
	plug := h.Tool(PluginTool)
	mods := []string{"answer", "answer64", "reactor"}
	for _, m := range mods {
		if res := run(t, h, PluginTool, pluginCall(wat(t, m), "", "")); res.ErrorKind != "" {
			t.Fatal(res.Error)
		}
	}
	if n := plug.run.compiles.Load(); n != 3 {
		t.Fatalf("compiled %d", n)
	}
	run(t, h, PluginTool, pluginCall(wat(t, "reactor"), "", "")) // cached
	run(t, h, PluginTool, pluginCall(wat(t, "answer"), "", ""))  // evicted: compiled again
	if n := plug.run.compiles.Load(); n != 4 {
		t.Fatalf("compiled %d, want 4", n)
	}
	plug.cache.mu.Lock()
	defer plug.cache.mu.Unlock()
	if len(plug.cache.entries) != 2 || plug.cache.lru.Len() != 2 {
		t.Fatalf("cache holds %d", len(plug.cache.entries))
	}
}

// TestEvictedWhileRunning drops a module from the cache while a call
// still runs it: the call finishes, and the module is closed after it.
func TestEvictedWhileRunning(t *testing.T) {
	t.Parallel()
	th := newTestHost()
	h := host(t, Config{AllowInline: true, InlineCacheSize: 1, hostModules: th.modules})
	done := make(chan executor.Result, 1)
	blockWasm := wat(t, "block")
	go func() { done <- run(t, h, PluginTool, pluginCall(blockWasm, "", "")) }()
	eventually(t, "the call to block", func() bool {
		select {
		case res := <-done:
			t.Fatalf("the call ended before blocking: %s %s", res.ErrorKind, res.Error)
		default:
		}
		_, in, _ := th.counts()
		return in == 1
	})
	wantOutput(t, run(t, h, PluginTool, pluginCall(wat(t, "answer"), "", "")), `{"result": 42}`)
	close(th.release)
	wantOutput(t, <-done, `{"result": 1}`)
}

func TestConcurrencyCap(t *testing.T) {
	t.Parallel()
	th := newTestHost()
	h := host(t, Config{MaxInstances: 2, hostModules: th.modules,
		Modules: []Module{module(t, "acme.block", wat(t, "block")), module(t, "acme.count", wat(t, "count"))}})
	results := make(chan executor.Result, 10)
	for range 10 {
		go func() { results <- run(t, h, "acme.block", `{}`) }()
	}
	// Holding a slot comes before entering the host function: wait for
	// both calls to be inside it, then check that the cap holds the rest.
	eventually(t, "2 calls in the host function", func() bool { _, in, _ := th.counts(); return in == 2 })
	eventually(t, "2 running and 8 waiting", func() bool { return h.running.Load() == 2 && h.waiting.Load() == 8 })
	if _, in, maxIn := th.counts(); in != 2 || maxIn != 2 {
		t.Fatalf("%d instances in the host function (at most %d), want 2", in, maxIn)
	}
	// The other tool shares the cap: its call waits too.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	res := runCtx(t, ctx, h, "acme.count", `{}`)
	wantKind(t, res, ledger.KindTimedOut)
	if n, _, _ := th.counts(); n != 0 {
		t.Fatalf("a call ran without a slot")
	}
	close(th.release)
	for range 10 {
		wantOutput(t, <-results, `{"result": 1}`)
	}
	if _, _, maxIn := th.counts(); maxIn != 2 {
		t.Fatalf("%d instances ran at once, want 2", maxIn)
	}
	if h.running.Load() != 0 || h.waiting.Load() != 0 {
		t.Fatalf("running %d waiting %d", h.running.Load(), h.waiting.Load())
	}
}

func TestEnginesAgree(t *testing.T) {
	t.Parallel()
	if !compilerSupported() {
		t.Fatal("wazero's compiler does not support this platform; this test compares it with the interpreter")
	}
	mods := []Module{module(t, "acme.echo", echoWasm(t)), module(t, "acme.answer", wat(t, "answer")),
		module(t, "acme.trap", wat(t, "trap"))}
	comp := host(t, Config{Engine: EngineCompiler, Modules: mods, AllowInline: true, CacheDir: cacheDir()})
	interp := host(t, Config{Engine: EngineInterpreter, Modules: mods, AllowInline: true})
	if comp.Tool("acme.echo").Engine() != EngineCompiler || interp.Tool("acme.echo").Engine() != EngineInterpreter {
		t.Fatal("engines")
	}
	if auto := host(t, Config{AllowInline: true}); auto.Tool(PluginTool).Engine() != EngineCompiler {
		t.Errorf("auto chose %s", auto.Tool(PluginTool).Engine())
	}
	calls := []struct{ tool, input string }{
		{"acme.echo", `{"a": [1, "two", {"three": 3}]}`},
		{"acme.echo", `{"exit": 4, "stderr": "four"}`},
		{"acme.answer", `{}`},
		{"acme.trap", `{}`},
		{PluginTool, pluginCall(wat(t, "grow"), "", "")},
		{PluginTool, pluginCall(wat(t, "reactor"), "", "")},
	}
	for _, c := range calls {
		a, b := run(t, comp, c.tool, c.input), run(t, interp, c.tool, c.input)
		if a.ErrorKind != b.ErrorKind || string(a.Output) != string(b.Output) && c.tool != "acme.trap" {
			t.Errorf("%s %s:\ncompiler:    %s %s %s\ninterpreter: %s %s %s", c.tool, c.input,
				a.ErrorKind, a.Error, a.Output, b.ErrorKind, b.Error, b.Output)
		}
		if a.Enforcement["engine"] != EngineCompiler || b.Enforcement["engine"] != EngineInterpreter {
			t.Errorf("engines recorded %v %v", a.Enforcement["engine"], b.Enforcement["engine"])
		}
	}
}

func TestWaitingForSlotEndsWithContext(t *testing.T) {
	t.Parallel()
	th := newTestHost()
	h := host(t, Config{MaxInstances: 1, hostModules: th.modules, Modules: []Module{module(t, "acme.block", wat(t, "block"))}})
	first := make(chan executor.Result)
	go func() { first <- run(t, h, "acme.block", `{}`) }()
	eventually(t, "the first call to hold the slot", func() bool { return h.running.Load() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	wantKind(t, runCtx(t, ctx, h, "acme.block", `{}`), ledger.KindCancelled)
	close(th.release)
	wantOutput(t, <-first, `{"result": 1}`)
}
