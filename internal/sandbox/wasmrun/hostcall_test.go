package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/wasm/meter"

	"github.com/execledger/execledger/ledger"
)

// Memory of the modules that call host functions (hostCallWAT): an
// iovec at 0 of the 64 KiB at 65536, a poll_oneoff subscription at 64 (a
// relative clock of an hour), the storage key "key" at 512, an http
// request at 1024, and room for what the functions write from
// hostScratch on.
const (
	hostIovec   = 0
	hostPoll    = 64
	hostKey     = 512
	hostRequest = 1024
	hostScratch = 8192
	hostIovLen  = 65536
)

// hostCase is how the tests call a host function: its arguments, by
// position (0 for those not given), and the bytes a call is charged for
// beyond HostCallFuel. A function that produces what it returns
// (secret_get, storage_get, http_request) is charged its result too.
type hostCase struct {
	args     []uint64
	bytes    uint64
	produces bool
	pages    int // memory; 0 means 2
}

const hostToolOnce = "acme.once"

var iovecCharge = uint64(8 + hostIovLen)

// hostCases are the functions called with other arguments than zeros,
// by "module.function"; any other is called with zeros and charged the
// call alone.
var hostCases = map[string]hostCase{
	wasiFunc("args_get"):                {args: []uint64{hostScratch, hostScratch + 64}, bytes: uint64(len(hostToolOnce)) + 1 + 4},
	wasiFunc("environ_get"):             {args: []uint64{hostScratch, hostScratch + 64}, bytes: 4 + 4}, // "A=1\x00" and its pointer
	wasiFunc("args_sizes_get"):          {args: []uint64{hostScratch, hostScratch + 4}},
	wasiFunc("environ_sizes_get"):       {args: []uint64{hostScratch, hostScratch + 4}},
	wasiFunc("clock_res_get"):           {args: []uint64{0, hostScratch}},
	wasiFunc("clock_time_get"):          {args: []uint64{0, 0, hostScratch}},
	wasiFunc("fd_pread"):                {args: []uint64{0, hostIovec, 1, 0, hostScratch}, bytes: iovecCharge},
	wasiFunc("fd_pwrite"):               {args: []uint64{1, hostIovec, 1, 0, hostScratch}, bytes: iovecCharge},
	wasiFunc("fd_read"):                 {args: []uint64{0, hostIovec, 1, hostScratch}, bytes: iovecCharge},
	wasiFunc("fd_write"):                {args: []uint64{1, hostIovec, 1, hostScratch}, bytes: iovecCharge},
	wasiFunc("fd_filestat_set_times"):   {args: []uint64{3}}, // on stdin, wazero's dereferences nil (a trap)
	wasiFunc("fd_prestat_dir_name"):     {args: []uint64{3, hostScratch, 100}, bytes: 100},
	wasiFunc("fd_readdir"):              {args: []uint64{3, hostScratch, 1000, 0, hostScratch + 2000}, bytes: 1000},
	wasiFunc("path_create_directory"):   {args: []uint64{3, hostScratch, 100}, bytes: 100},
	wasiFunc("path_filestat_get"):       {args: []uint64{3, 0, hostScratch, 100, hostScratch + 200}, bytes: 100},
	wasiFunc("path_filestat_set_times"): {args: []uint64{3, 0, hostScratch, 100, 0, 0, 0}, bytes: 100},
	wasiFunc("path_link"):               {args: []uint64{3, 0, hostScratch, 100, 3, hostScratch, 100}, bytes: 200},
	wasiFunc("path_open"):               {args: []uint64{3, 0, hostScratch, 100, 0, 0, 0, 0, hostScratch + 200}, bytes: 100},
	wasiFunc("path_readlink"):           {args: []uint64{3, hostScratch, 100, hostScratch + 200, 100, hostScratch + 400}, bytes: 200},
	wasiFunc("path_remove_directory"):   {args: []uint64{3, hostScratch, 100}, bytes: 100},
	wasiFunc("path_rename"):             {args: []uint64{3, hostScratch, 100, 3, hostScratch, 100}, bytes: 200},
	wasiFunc("path_symlink"):            {args: []uint64{hostScratch, 100, 3, hostScratch, 100}, bytes: 200},
	wasiFunc("path_unlink_file"):        {args: []uint64{3, hostScratch, 100}, bytes: 100},
	wasiFunc("poll_oneoff"):             {args: []uint64{hostPoll, hostScratch, 1, hostScratch + 64}, bytes: 48 + 32},
	wasiFunc("random_get"):              {args: []uint64{65536, 16 << 20}, bytes: 16 << 20, pages: 257},

	CapabilitiesModule + ".secret_get":      {args: []uint64{20_000, hostScratch, 256}, produces: true},
	CapabilitiesModule + ".channel_publish": {args: []uint64{40_000, hostScratch, 100}, bytes: 100},
	CapabilitiesModule + ".storage_get":     {args: []uint64{30_000, hostKey, 3, hostScratch, 256}, bytes: 3, produces: true},
	CapabilitiesModule + ".storage_put":     {args: []uint64{30_000, hostKey, 3, hostScratch, 100}, bytes: 103},
	CapabilitiesModule + ".http_request":    {args: []uint64{10_000, hostRequest, 0 /* the request's length */, hostScratch, 16 << 10}, produces: true},
}

// caseOf is hostCases[fn], http_request's completed for request.
func caseOf(fn, request string) hostCase {
	c := hostCases[fn]
	c.args = slices.Clone(c.args)
	if fn == CapabilitiesModule+".http_request" {
		c.args[2], c.bytes = uint64(len(request)), uint64(len(request))
	}
	return c
}

func wasiFunc(name string) string { return wasi_snapshot_preview1.ModuleName + "." + name }

// hostFunctions are the functions a module can import in tier A, by
// "module.function": every runtime's but the meter's yield, which
// modules cannot import (meter.ReservedPrefix) and which charges nothing,
// since it runs once a quantum of fuel, a quantum that differs between
// engines.
func hostFunctions(t *testing.T) map[string]api.FunctionDefinition {
	t.Helper()
	h := host(t, Config{AllowInline: true})
	out := map[string]api.FunctionDefinition{}
	for mod, fns := range h.Tool(PluginTool).run.provided {
		if mod == meter.YieldModule {
			continue
		}
		for name, def := range fns {
			out[mod+"."+name] = def
		}
	}
	for _, mod := range []string{wasi_snapshot_preview1.ModuleName, PalyraCapabilitiesModule, CapabilitiesModule} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(out)), func(k string) bool { return strings.HasPrefix(k, mod+".") }) {
			t.Fatalf("no function of %s among %v", mod, slices.Sorted(maps.Keys(out)))
		}
	}
	for k := range hostCases {
		if _, ok := out[k]; !ok {
			t.Fatalf("hostCases names %s, which no host module provides", k)
		}
	}
	return out
}

// hostCallWAT is a module importing fn (module.function, of type def)
// that calls it with c's arguments: once (returning its result, or 0),
// and forever, in a tight loop.
func hostCallWAT(fn string, def api.FunctionDefinition, c hostCase, request string) string {
	dot := strings.LastIndex(fn, ".") // module names have dots, functions' do not
	mod, name := fn[:dot], fn[dot+1:]
	types := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, " ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(module\n  (import %q %q (func $f", mod, name)
	if len(def.ParamTypes()) > 0 {
		fmt.Fprintf(&b, " (param %s)", types(def.ParamTypes()))
	}
	if len(def.ResultTypes()) > 0 {
		fmt.Fprintf(&b, " (result %s)", types(def.ResultTypes()))
	}
	pages := c.pages
	if pages == 0 {
		pages = 2
	}
	fmt.Fprintf(&b, "))\n  (memory (export \"memory\") %d)\n", pages)
	iov := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 65536), hostIovLen)
	sub := make([]byte, 48) // userdata, clock (0) at 8, relative timeout at 24
	binary.LittleEndian.PutUint64(sub[24:], uint64(time.Hour))
	for _, d := range []struct {
		at   int
		data []byte
	}{{hostIovec, iov}, {hostPoll, sub}, {hostKey, []byte("key")}, {hostRequest, []byte(request)}} {
		fmt.Fprintf(&b, "  (data (i32.const %d) \"", d.at)
		for _, x := range d.data {
			fmt.Fprintf(&b, "\\%02x", x)
		}
		b.WriteString("\")\n")
	}
	var call strings.Builder
	call.WriteString("(call $f")
	for i, t := range def.ParamTypes() {
		var v uint64
		if i < len(c.args) {
			v = c.args[i]
		}
		fmt.Fprintf(&call, " (%s.const %d)", api.ValueTypeName(t), int64(v))
	}
	call.WriteString(")")
	ret, loop := call.String()+" (i32.const 0)", call.String()
	if len(def.ResultTypes()) > 0 {
		ret, loop = call.String(), "(drop "+call.String()+")"
	}
	fmt.Fprintf(&b, "  (func (export \"once\") (result i32) %s)\n", ret)
	fmt.Fprintf(&b, "  (func (export \"forever\") (result i32) (loop $again %s (br $again)) (i32.const 0)))\n", loop)
	return b.String()
}

// watText compiles src with wat2wasm, once per text.
func watText(tb testing.TB, src string) []byte {
	tb.Helper()
	key := fmt.Sprintf("text-%x", sha256.Sum256([]byte(src)))
	return built(tb, key, func() ([]byte, error) {
		tool, err := exec.LookPath("wat2wasm")
		if err != nil {
			return nil, fmt.Errorf("wat2wasm is not installed (apt-get install wabt; scripts/ensure-test-deps.sh does it): %w", err)
		}
		in, out := filepath.Join(buildDir, key+".wat"), filepath.Join(buildDir, key+".wasm")
		if err := os.WriteFile(in, []byte(src), 0o600); err != nil {
			return nil, err
		}
		if msg, err := exec.Command(tool, in, "-o", out).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("wat2wasm: %w\n%s\n%s", err, msg, src)
		}
		return os.ReadFile(out)
	})
}

// hostCallSetup serves http_request's host and returns the request the
// modules send to it.
func hostCallSetup(t *testing.T) (HTTPOptions, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	opts := localOptions(t, srv)
	req, _ := json.Marshal(httpRequestJSON{URL: fmt.Sprintf("http://api.example.test:%d/", opts.Ports[0])})
	return opts, string(req)
}

// hostCallHost registers wasm once per tool, with entrypoint, fuel and
// timeout, granted everything the cases use.
func hostCallHost(t *testing.T, engine string, opts HTTPOptions, wasm []byte, tools map[string]Module) *Host {
	t.Helper()
	grant := Capabilities{HTTPHosts: []string{"api.example.test"}, Secrets: []string{"API_TOKEN"},
		StoragePrefixes: []string{"acme/"}, Channels: []string{"news"}}
	store := &MemoryStorage{}
	store.Put(context.Background(), "acme/key", []byte("hello"))
	cfg := Config{Engine: engine, Policy: grant, Storage: store, HTTP: opts,
		Secrets: EnvSecrets{LookupEnv: func(string) (string, bool) { return testSecret, true }}}
	for _, id := range slices.Sorted(maps.Keys(tools)) {
		m := module(t, id, wasm)
		spec := tools[id]
		m.Entrypoint, m.FuelLimit, m.Timeout, m.Capabilities = spec.Entrypoint, spec.FuelLimit, spec.Timeout, grant
		m.Env = map[string]string{"A": "1"}
		cfg.Modules = append(cfg.Modules, m)
	}
	return host(t, cfg)
}

// hostCallBound is how long after its timeout or cancellation a call
// may take to end in these tests: a correctness bound, not a speed one.
// A call ends at its next host call, tens of milliseconds at most even
// under the race detector; the rest allows for a 2-core machine busy with
// other work, whose garbage collector has been seen to wait seconds for
// goroutines (see TestLongCallDoesNotHoldUpTheProcess). Before host calls checked
// the time, random_get's loop was still running a minute after its
// 300 ms timeout, with some 2^18 calls of 16 MiB to go to its next
// yield.
const hostCallBound = 2 * time.Minute

// runWithin runs tool name of h and fails the test at once if it has not
// ended within limit.
func runWithin(t *testing.T, ctx context.Context, h *Host, name string, limit time.Duration) (executor.Result, time.Duration) {
	t.Helper()
	began := time.Now()
	done := make(chan executor.Result, 1)
	go func() { done <- h.Tool(name).Run(ctx, executor.Call{Input: json.RawMessage(`{}`)}) }()
	select {
	case res := <-done:
		return res, time.Since(began)
	case <-time.After(limit):
		t.Fatalf("%s (%s) still running after %v", name, h.Tool(name).Engine(), limit)
		return executor.Result{}, 0
	}
}

// TestHostCallsCharge: each call of every host function a module can
// import is charged HostCallFuel and HostByteFuel per byte of what it is
// passed (and of what it produced), on both engines alike: a module that
// calls it once uses the fuel of its instructions (the arguments, the
// call, the end, and i32.const 0 for a function without a result) and
// that charge.
func TestHostCallsCharge(t *testing.T) {
	t.Parallel()
	opts, req := hostCallSetup(t)
	for fn, def := range hostFunctions(t) {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			c := caseOf(fn, req)
			wasm := watText(t, hostCallWAT(fn, def, c, req))
			var used []int64
			for _, engine := range []string{EngineCompiler, EngineInterpreter} {
				h := hostCallHost(t, engine, opts, wasm, map[string]Module{hostToolOnce: {Entrypoint: "once", FuelLimit: 1 << 40}})
				res := run(t, h, hostToolOnce, `{}`)
				var out struct{ Result int64 }
				json.Unmarshal(res.Output, &out)
				if res.ErrorKind != "" && !strings.HasSuffix(fn, ".proc_exit") {
					t.Fatalf("%s: %s: %s", engine, res.ErrorKind, res.Error)
				}
				want := int64(len(def.ParamTypes())) + 2 + HostCallFuel + int64(c.bytes)*HostByteFuel
				if len(def.ResultTypes()) == 0 {
					want++ // i32.const 0
				}
				if c.produces && out.Result > 0 {
					want += out.Result * HostByteFuel
				}
				if got := res.Resources["fuel_used"]; got != want {
					t.Errorf("%s: a call used %d fuel, want %d (result %d)", engine, got, want, out.Result)
				}
				if fmt.Sprint(res.Enforcement["host_call_fuel"]) != fmt.Sprintf("map[byte:%d call:%d]", HostByteFuel, HostCallFuel) {
					t.Errorf("%s: enforcement host_call_fuel %v", engine, res.Enforcement["host_call_fuel"])
				}
				used = append(used, res.Resources["fuel_used"])
			}
			if used[0] != used[1] {
				t.Errorf("fuel used %v differs between the engines", used)
			}
		})
	}
}

// TestHostCallLoopsEnd: a module that calls a host function in a tight
// loop, whatever the function (random_get filling 16 MiB a call, fd_write
// writing 64 KiB, poll_oneoff sleeping an hour, http_request, ...),
// ends on its timeout, on cancellation and when its fuel runs out, on
// both engines, within the time asked for and a bound allowing for a
// loaded machine. (proc_exit ends the call at its first call.)
func TestHostCallLoopsEnd(t *testing.T) {
	t.Parallel()
	const (
		timeout = 300 * time.Millisecond
		cancel  = 100 * time.Millisecond
		fuel    = 2_000_000
		bound   = hostCallBound
	)
	opts, req := hostCallSetup(t)
	tools := map[string]Module{
		"acme.timeout": {Entrypoint: "forever", FuelLimit: 1 << 60, Timeout: timeout},
		// An hour: only the cancellation, or the fuel, can end these.
		"acme.cancel": {Entrypoint: "forever", FuelLimit: 1 << 60, Timeout: time.Hour},
		"acme.fuel":   {Entrypoint: "forever", FuelLimit: fuel, Timeout: time.Hour},
	}
	for fn, def := range hostFunctions(t) {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			c := caseOf(fn, req)
			wasm := watText(t, hostCallWAT(fn, def, c, req))
			exits := strings.HasSuffix(fn, ".proc_exit")
			for _, engine := range []string{EngineCompiler, EngineInterpreter} {
				h := hostCallHost(t, engine, opts, wasm, tools)

				res, took := runWithin(t, context.Background(), h, "acme.timeout", timeout+bound)
				if exits {
					wantKind(t, res, ledger.KindRuntimeFailure, "exited without returning a result")
					continue
				}
				wantKind(t, res, ledger.KindTimedOut)
				if !res.TimedOut || took < timeout {
					t.Errorf("%s: TimedOut %v after %v", engine, res.TimedOut, took)
				}

				ctx, stop := context.WithCancel(context.Background())
				time.AfterFunc(cancel, stop)
				res, _ = runWithin(t, ctx, h, "acme.cancel", cancel+bound)
				stop()
				wantKind(t, res, ledger.KindCancelled)

				res, _ = runWithin(t, context.Background(), h, "acme.fuel", bound)
				wantKind(t, res, ledger.KindQuotaExceeded, fmt.Sprintf("out of fuel: the limit is %d", fuel))
				if res.Resources["fuel_used"] != fuel {
					t.Errorf("%s: fuel used %d, want the limit %d", engine, res.Resources["fuel_used"], fuel)
				}
			}
		})
	}
}

// TestHostWaitEndsWithTheCall: http_request waiting on a server that
// never answers stops waiting when the call's time runs out or its
// context ends, and the call then ends as it would at a yield.
func TestHostWaitEndsWithTheCall(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	opts := localOptions(t, srv)
	req, _ := json.Marshal(httpRequestJSON{URL: fmt.Sprintf("http://api.example.test:%d/", opts.Ports[0])})
	fn := CapabilitiesModule + ".http_request"
	wasm := watText(t, hostCallWAT(fn, hostFunctions(t)[fn], caseOf(fn, string(req)), string(req)))
	for _, engine := range []string{EngineCompiler, EngineInterpreter} {
		h := hostCallHost(t, engine, opts, wasm, map[string]Module{
			"acme.timeout": {Entrypoint: "forever", Timeout: 300 * time.Millisecond},
			"acme.cancel":  {Entrypoint: "forever", Timeout: time.Hour},
		})
		res, took := runWithin(t, context.Background(), h, "acme.timeout", 300*time.Millisecond+hostCallBound)
		wantKind(t, res, ledger.KindTimedOut)
		if took < 300*time.Millisecond || len(res.Events) != 1 || res.Events[0].Payload.(map[string]any)["outcome"] != "timed_out" {
			t.Errorf("%s: ended after %v with %d events, the first %v", engine, took, len(res.Events), res.Events[:min(1, len(res.Events))])
		}
		ctx, stop := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, stop)
		res, took = runWithin(t, ctx, h, "acme.cancel", 100*time.Millisecond+hostCallBound)
		stop()
		wantKind(t, res, ledger.KindCancelled)
		t.Logf("%s: cancelled after 100 ms, ended after %v", engine, took)
	}
}
