package wasmrun

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/execledger/execledger/executor"

	"github.com/execledger/execledger/ledger"
)

const testSecret = "s3cr3t-value-XYZ"

// capsHost registers testdata/<file>.wat once per entrypoint, as tool
// acme.<entrypoint> (underscores as dashes), under policy, the module asking
// for reg; secret API_TOKEN is testSecret.
func capsHost(t *testing.T, file string, policy, reg Capabilities, entrypoints ...string) *Host {
	t.Helper()
	wasm := wat(t, file)
	cfg := Config{Policy: policy, Secrets: EnvSecrets{Prefix: "TEST_", LookupEnv: func(k string) (string, bool) {
		if k == "TEST_API_TOKEN" {
			return testSecret, true
		}
		return "", false
	}}}
	for _, e := range entrypoints {
		m := module(t, "acme."+strings.ReplaceAll(e, "_", "-"), wasm)
		m.Entrypoint, m.Capabilities = e, reg
		cfg.Modules = append(cfg.Modules, m)
	}
	return host(t, cfg)
}

func tool(e string) string { return "acme." + strings.ReplaceAll(e, "_", "-") }

func TestGrantIsSortedIntersection(t *testing.T) {
	t.Parallel()
	got := grant(Capabilities{Secrets: []string{"b", "a", "c"}, Channels: []string{"x"}},
		Capabilities{Secrets: []string{"c", "a", "z", "a"}, HTTPHosts: []string{"example.com"}})
	if !slices.Equal(got.Secrets, []string{"a", "c"}) || len(got.Channels) != 0 || len(got.HTTPHosts) != 0 {
		t.Fatalf("grant %+v", got)
	}
	if h := got.handle(classSecret, 1); h != 20_001 {
		t.Errorf("handle %d", h)
	}
	if n, ok := got.lookup(classSecret, 20_001); !ok || n != "c" {
		t.Errorf("lookup %q %v", n, ok)
	}
	if _, ok := got.lookup(classChannel, 20_001); ok {
		t.Error("a secret handle resolved as a channel")
	}
}

// TestGrantMeetsHostSpellings: the policy and a registration may spell a
// host differently (case, trailing dot); the grant is the host once, in
// the egress allowlist's normal form.
func TestGrantMeetsHostSpellings(t *testing.T) {
	t.Parallel()
	got := grant(Capabilities{HTTPHosts: []string{"API.Example.com", "other.example", "*bad*"}},
		Capabilities{HTTPHosts: []string{"api.example.com.", "*bad*", "third.example"}})
	if !slices.Equal(got.HTTPHosts, []string{"*bad*", "api.example.com"}) {
		t.Fatalf("granted hosts %q", got.HTTPHosts)
	}
}

func TestPalyraHandles(t *testing.T) {
	t.Parallel()
	all := Capabilities{HTTPHosts: []string{"b.example", "a.example"}, Secrets: []string{"ZETA", "ALPHA", "MID"},
		StoragePrefixes: []string{"p/"}, Channels: []string{"news"}}
	policy := all
	policy.Secrets = []string{"ALPHA", "ZETA", "OTHER"} // MID not allowed
	policy.Channels = nil                               // no channel
	h := capsHost(t, "caps_handles", policy, all,
		"counts", "http1", "secret0", "secret1", "secret2", "secret_neg", "storage0", "channel0")
	for e, want := range map[string]int{
		"counts": 2000 + 200 + 10, "http1": 10_001, "secret0": 20_000, "secret1": 20_001,
		"secret2": -1, "secret_neg": -1, "storage0": 30_000, "channel0": -1,
	} {
		res := run(t, h, tool(e), `{}`)
		var out struct{ Result int }
		if res.ErrorKind != "" || json.Unmarshal(res.Output, &out) != nil || out.Result != want {
			t.Errorf("%s: %s %s, want %d", e, res.Output, res.Error, want)
		}
	}
	res := run(t, h, tool("counts"), `{}`)
	caps := res.Enforcement["capabilities"].(map[string]any)
	if got := caps[classSecret].([]string); !slices.Equal(got, []string{"ALPHA", "ZETA"}) {
		t.Errorf("enforcement secrets %v", got)
	}
	if hm := res.Enforcement["host_modules"].([]string); !slices.Contains(hm, PalyraCapabilitiesModule) {
		t.Errorf("host modules %v", hm)
	}
}

func TestPluginRunIsGrantedNothing(t *testing.T) {
	t.Parallel()
	h := host(t, Config{AllowInline: true, Policy: Capabilities{Secrets: []string{"API_TOKEN"}}})
	wantOutput(t, run(t, h, PluginTool, pluginCall(wat(t, "caps_handles"), "counts", "")), `{"result": 0}`)
	wantOutput(t, run(t, h, PluginTool, pluginCall(wat(t, "caps_use"), "get", "")), `{"result": -1}`)
}

func TestSecretReadAndRedacted(t *testing.T) {
	t.Parallel()
	c := Capabilities{Secrets: []string{"API_TOKEN"}, Channels: []string{"alerts"}}
	h := capsHost(t, "caps_use", c, c, "get", "get_small", "get_bad_memory", "print", "fail")

	wantOutput(t, run(t, h, tool("get"), `{}`), `{"result": 16}`)
	wantOutput(t, run(t, h, tool("get_small"), `{}`), `{"result": 16}`)
	wantOutput(t, run(t, h, tool("get_bad_memory"), `{}`), `{"result": -3}`)

	res := run(t, h, tool("print"), `{}`)
	wantOutput(t, res, `{"secret": "<redacted>"}`)
	noSecret(t, res)
	if got := eventTypes(res); !slices.Equal(got, []string{"capability.used", "capability.used", "channel.published", "channel.message"}) {
		t.Fatalf("events %v", got)
	}
	if p := res.Events[0].Payload.(map[string]any); p["name"] != "API_TOKEN" || p["outcome"] != "ok" || p["handle"] != int32(20_000) {
		t.Errorf("capability.used %v", p)
	}
	if p := res.Events[2].Payload.(map[string]any); p["redacted"] != true || p["channel"] != "alerts" {
		t.Errorf("channel.published %v", p)
	}

	res = run(t, h, tool("fail"), `{}`)
	wantKind(t, res, ledger.KindRuntimeFailure)
	var out struct{ Stderr string }
	if json.Unmarshal(res.Output, &out); out.Stderr != `{"secret":"<redacted>"}` {
		t.Errorf("stderr not redacted: %s", res.Output)
	}
	noSecret(t, res)
}

func TestTruncatedStderrKeepsNoPartOfASecret(t *testing.T) {
	t.Parallel()
	red := callRedactor{values: []string{testSecret}}
	for in, want := range map[string]string{
		"x s3cr3t-v": "x ", "x czNjcjN0LX": "x ", "x s3cr3t-value-XYZ": "x s3cr3t-value-XYZ", "x y": "x y",
	} {
		if got := red.cut(in); got != want {
			t.Errorf("cut(%q) = %q, want %q", in, got, want)
		}
	}

	c := Capabilities{Secrets: []string{"API_TOKEN"}}
	m := module(t, "acme.fail", wat(t, "caps_use"))
	m.Entrypoint, m.Capabilities = "fail", c
	h := host(t, Config{Policy: c, StderrLimit: 15, Modules: []Module{m},
		Secrets: EnvSecrets{LookupEnv: func(string) (string, bool) { return testSecret, true }}})
	res := run(t, h, "acme.fail", `{}`)
	var out struct{ Stderr string }
	if json.Unmarshal(res.Output, &out); out.Stderr != `{"secret":"` {
		t.Errorf("stderr %q", out.Stderr)
	}
}

func TestUngrantedSecretRefused(t *testing.T) {
	t.Parallel()
	// The module asks for API_TOKEN; the policy does not allow it.
	h := capsHost(t, "caps_use", Capabilities{Channels: []string{"alerts"}},
		Capabilities{Secrets: []string{"API_TOKEN"}, Channels: []string{"alerts"}},
		"get", "get_ungranted", "get_other_class", "print")
	for _, e := range []string{"get", "get_ungranted", "get_other_class"} {
		res := run(t, h, tool(e), `{}`)
		wantOutput(t, res, `{"result": -1}`)
		if p := res.Events[0].Payload.(map[string]any); p["outcome"] != "denied" || p["name"] != "" {
			t.Errorf("%s: event %v", e, p)
		}
	}
	res := run(t, h, tool("print"), `{}`) // traps when refused
	wantKind(t, res, ledger.KindRuntimeFailure, "unreachable")
	noSecret(t, res)
}

func TestUnknownSecretNotFound(t *testing.T) {
	t.Parallel()
	c := Capabilities{Secrets: []string{"MISSING"}}
	h := capsHost(t, "caps_use", c, c, "get")
	res := run(t, h, tool("get"), `{}`)
	wantOutput(t, res, `{"result": -2}`)
	if p := res.Events[0].Payload.(map[string]any); p["outcome"] != "not_found" {
		t.Errorf("event %v", p)
	}
}

func TestChannelPublish(t *testing.T) {
	t.Parallel()
	c := Capabilities{Channels: []string{"alerts"}}
	h := capsHost(t, "caps_use", c, c, "publish", "publish_raw", "publish_ungranted")

	res := run(t, h, tool("publish"), `{}`)
	wantOutput(t, res, `{"result": 0}`)
	if got := eventTypes(res); !slices.Equal(got, []string{"capability.used", "channel.published", "channel.message"}) {
		t.Fatalf("events %v", got)
	}
	b, _ := json.Marshal(res.Events[2].Payload)
	if string(b) != `{"channel":"alerts","message":{"hello":"world"}}` {
		t.Errorf("channel.message %s", b)
	}
	b, _ = json.Marshal(res.Events[1].Payload)
	if !strings.Contains(string(b), `"bytes":17`) || !strings.Contains(string(b), `"redacted":false`) {
		t.Errorf("channel.published %s", b)
	}

	res = run(t, h, tool("publish_raw"), `{}`)
	wantOutput(t, res, `{"result": 0}`)
	if p := res.Events[2].Payload.(map[string]any); p["message_base64"] != "AAFiaW4=" {
		t.Errorf("channel.message %v", p)
	}

	res = run(t, h, tool("publish_ungranted"), `{}`)
	wantOutput(t, res, `{"result": -1}`)
	if got := eventTypes(res); !slices.Equal(got, []string{"capability.used"}) {
		t.Errorf("events %v", got)
	}
}

func TestCapabilitiesChecked(t *testing.T) {
	t.Parallel()
	m := module(t, "acme.answer", wat(t, "answer"))
	m.Capabilities = Capabilities{Channels: []string{"a", "a"}}
	if _, err := New(context.Background(), Config{Modules: []Module{m}}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("New: %v", err)
	}
	_, err := New(context.Background(), Config{Policy: Capabilities{Secrets: []string{""}}})
	if err == nil || !strings.Contains(err.Error(), "policy") {
		t.Errorf("New: %v", err)
	}
}

func TestDirSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "TOKEN"), []byte("file-secret\n"), 0o600)
	os.Symlink("/etc/hostname", filepath.Join(dir, "ESCAPE"))
	d := DirSecrets{Dir: dir}
	ctx := context.Background()
	if v, err := d.Secret(ctx, "TOKEN"); err != nil || v != "file-secret" {
		t.Errorf("TOKEN: %q %v", v, err)
	}
	if _, err := d.Secret(ctx, "NONE"); !errors.Is(err, ErrSecretNotFound) {
		t.Errorf("NONE: %v", err)
	}
	if _, err := d.Secret(ctx, "../TOKEN"); !errors.Is(err, ErrSecretNotFound) {
		t.Errorf("../TOKEN: %v", err)
	}
	if v, err := d.Secret(ctx, "ESCAPE"); err == nil {
		t.Errorf("ESCAPE read %q through a symbolic link", v)
	}
}

// noSecret fails if testSecret appears anywhere in res: output, error or
// marshalled events.
func noSecret(t *testing.T, res executor.Result) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), testSecret) {
		t.Errorf("the secret leaked: %s", b)
	}
	for _, e := range res.Events {
		b, _ := json.Marshal(e.Payload)
		if strings.Contains(string(b), testSecret) || strings.Contains(string(b), "czNjcjN0") { // base64 of its start
			t.Errorf("the secret leaked in %s: %s", e.Type, b)
		}
	}
}

func eventTypes(res executor.Result) []string {
	var out []string
	for _, e := range res.Events {
		out = append(out, e.Type)
	}
	return out
}

func TestStorage(t *testing.T) {
	t.Parallel()
	c := Capabilities{Secrets: []string{"API_TOKEN"}, StoragePrefixes: []string{"acme/"}}
	wasm := wat(t, "caps_storage")
	store := &MemoryStorage{}
	cfg := Config{Policy: c, Storage: store,
		Secrets: EnvSecrets{LookupEnv: func(string) (string, bool) { return testSecret, true }}}
	for _, e := range []string{"put", "get", "get_missing", "put_nul", "put_ungranted", "with_secret", "put_get", "put_trap", "put_loop"} {
		m := module(t, tool(e), wasm)
		m.Entrypoint, m.Capabilities = e, c
		cfg.Modules = append(cfg.Modules, m)
	}
	cfg.FuelLimit = 1_000_000
	h := host(t, cfg)
	if !h.Tool(tool("put")).SafeToRepeat() {
		t.Error("a tool granted storage is not SafeToRepeat, though its writes commit only with its outcome")
	}
	// commit applies a result's writes as the executor's completion does.
	commit := func(res executor.Result) {
		for _, w := range res.StorageWrites {
			if err := store.Put(context.Background(), w.Key, w.Value); err != nil {
				t.Fatal(err)
			}
		}
	}

	wantOutput(t, run(t, h, tool("get_missing"), `{}`), `{"result": -2}`)
	res := run(t, h, tool("put"), `{}`)
	wantOutput(t, res, `{"result": 0}`)
	b, _ := json.Marshal(res.Events)
	if want := `[{"Type":"capability.used","Payload":{"class":"storage","handle":30000,"key":"acme/k","name":"acme/","outcome":"ok"}}]`; string(b) != want {
		t.Errorf("events %s, want %s", b, want)
	}
	if v, ok, _ := store.Get(context.Background(), "acme/k"); ok {
		t.Errorf("a put reached the store before the call's outcome: %q", v)
	}
	if w := res.StorageWrites; len(w) != 1 || w[0].Key != "acme/k" || string(w[0].Value) != "v1" {
		t.Errorf("StorageWrites %+v", w)
	}
	wantOutput(t, run(t, h, tool("get"), `{}`), `{"result": -2}`)
	// Before the write is committed, only the call that made it sees it.
	res = run(t, h, tool("put_get"), `{}`)
	wantOutput(t, res, `{"result": 2}`)
	if len(res.StorageWrites) != 1 {
		t.Errorf("put_get's writes %+v", res.StorageWrites)
	}
	if got := res.Events[1].Payload.(map[string]any); got["outcome"] != "ok" || got["key"] != "acme/k" {
		t.Errorf("put_get's get: %v", got)
	}
	commit(res)
	wantOutput(t, run(t, h, tool("get"), `{}`), `{"result": 2}`)
	for e, kind := range map[string]ledger.ErrorKind{"put_trap": ledger.KindRuntimeFailure, "put_loop": ledger.KindQuotaExceeded} {
		res := run(t, h, tool(e), `{}`)
		wantKind(t, res, kind)
		if len(res.StorageWrites) != 0 {
			t.Errorf("%s: writes %+v: a failed call's writes must be dropped", e, res.StorageWrites)
		}
	}
	wantOutput(t, run(t, h, tool("put_nul"), `{}`), `{"result": -7}`)
	wantOutput(t, run(t, h, tool("put_ungranted"), `{}`), `{"result": -1}`)

	res = run(t, h, tool("with_secret"), `{}`)
	wantOutput(t, res, `{"result": 0}`)
	noSecret(t, res)
	if w := res.StorageWrites; len(w) != 1 || w[0].Key != "acme/s" || strings.Contains(string(w[0].Value), testSecret) {
		t.Errorf("with_secret's writes: %q", w)
	}
}

func TestCapabilityUsesBounded(t *testing.T) {
	t.Parallel()
	h := capsHost(t, "caps_use", Capabilities{}, Capabilities{}, "spin")
	res := run(t, h, tool("spin"), `{}`)
	wantOutput(t, res, `{"result": -6}`)
	if len(res.Events) != maxCapabilityUses {
		t.Errorf("%d events, want %d", len(res.Events), maxCapabilityUses)
	}
}
