package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testcache"
	"github.com/execledger/execledger/internal/testdb"
)

// goSkill builds testdata/skills/<name> as `make skills` does, into
// dir/<name>.wasm, and returns the module's sha256.
func goSkill(t *testing.T, dir, name string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the %s skill: %v", name, err)
	}
	out := filepath.Join(dir, name+".wasm")
	// -trimpath: without it the module embeds the checkout's path, and a
	// fresh clone elsewhere misses wazero's cache (keyed by the bytes).
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, "./testdata/skills/"+name)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the %s skill: %v\n%s", name, err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	precompile(t, out)
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// precompile compiles modules into wasmCacheDir as serve will, in a
// process built without the race detector (testdata/wasmcache), where a
// Go module compiles in seconds: serve, in this race-built binary, then
// finds the machine code.
func precompile(t *testing.T, modules ...string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run testdata/wasmcache: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"run", "./testdata/wasmcache", "-dir", wasmCacheDir(t)}, modules...)...)
	cmd.Dir = filepath.Join("..", "..")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling %v into the test cache: %v\n%s", modules, err, msg)
	}
}

// wasmCacheDir is the wazero cache_dir the Go skill tests share, within
// a run and between runs (package testcache): serve compiles a 2 MB Go
// module for a minute or more under the race detector on a loaded
// machine. The compile itself is covered by package wasmrun and by a
// machine's first run.
func wasmCacheDir(t *testing.T) string {
	t.Helper()
	if dir, ok := testcache.Wazero(); ok {
		return dir
	}
	return t.TempDir()
}

const capdemoSecret = "g0-sk1ll-t0ken-QRS"

// capdemoConfig writes a configuration file in dir registering
// capdemo.wasm as acme.capdemo, granted a secret from dir/secrets, a
// storage prefix, a channel and an http host.
func capdemoConfig(t *testing.T, dir, digest string, httpPort int) string {
	t.Helper()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "DEMO_TOKEN"), []byte(capdemoSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `[wasm]
policy_secrets = ["DEMO_TOKEN"]
policy_storage_prefixes = ["acme/capdemo/"]
policy_channels = ["acme.alerts"]
policy_http_hosts = ["127.0.0.1", "127.0.0.2"]
secrets_dir = "` + secrets + `"
cache_dir = "` + wasmCacheDir(t) + `"
http_ports = [` + fmt.Sprint(httpPort) + `]
http_private_ranges = ["127.0.0.1/32"]

[[wasm.modules]]
tool = "acme.capdemo"
path = "capdemo.wasm"
sha256 = "` + digest + `"
[wasm.modules.capabilities]
secrets = ["DEMO_TOKEN"]
storage_prefixes = ["acme/capdemo/"]
channels = ["acme.alerts"]
http_hosts = ["127.0.0.1", "127.0.0.2"]
`
	p := filepath.Join(dir, "execledger.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeRunsGoSkills runs testdata/skills/capdemo, a skill written in
// Go, through serve and ledger.submit, using each capability: a secret
// (echoed redacted, in no event), storage across two requests, a channel
// publication (appended to stream channel:acme.alerts) and http requests:
// one to a host whose loopback address http_private_ranges admits, one to
// a granted host whose loopback address it does not.
func TestServeRunsGoSkills(t *testing.T) {
	t.Parallel()
	db, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true")
	dir := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello, skill") }))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	cfg := capdemoConfig(t, dir, goSkill(t, dir, "capdemo"), port)
	stop, out := startCommand(t, environ, "serve", "--config", cfg)
	runs := 0 // a run's budget is a few calls: one run per request
	submit := func(input string) (map[string]any, map[string]any) {
		t.Helper()
		req := submitJSON(t, db, "acme.capdemo", input, fmt.Sprint("r", runs))
		runs++
		output, _ := req["output"].(map[string]any)
		if req["state"] != "succeeded" || req["tier"] != "A" {
			t.Fatalf("acme.capdemo %s: %v\n%s", input, req, out)
		}
		return req, output
	}

	secret, o := submit(`{"op":"secret"}`)
	if o["secret"] != "<redacted>" || o["length"] != float64(len(capdemoSecret)) {
		t.Errorf("secret: %v", o)
	}
	counts := map[string]any{"secrets": 1.0, "storage": 1.0, "channels": 1.0, "http": 2.0}
	if g, _ := o["grants"].(map[string]any); !maps.Equal(g, counts) {
		t.Errorf("grants (Palyra's counts): %v", o["grants"])
	}
	if _, o := submit(`{"op":"store","key":"greeting","value":"hello from Go"}`); o["value"] != "hello from Go" {
		t.Errorf("store: %v", o)
	}
	if _, o := submit(`{"op":"recall","key":"greeting"}`); o["value"] != "hello from Go" {
		t.Errorf("recall: %v", o)
	}
	if _, o := submit(`{"op":"publish","message":{"level":"info","text":"deployed"}}`); o["published"] == nil || o["error"] != nil {
		t.Errorf("publish: %v", o)
	}
	if _, o := submit(fmt.Sprintf(`{"op":"http","url":"http://127.0.0.1:%d/","grant":0}`, port)); o["status"] != float64(200) || o["body"] != "hello, skill" {
		t.Errorf("http to 127.0.0.1 (admitted by http_private_ranges): %v", o)
	}
	fetched, o := submit(fmt.Sprintf(`{"op":"http","url":"http://127.0.0.2:%d/","grant":1}`, port))
	if o["error"] != "private_address" || o["code"] != float64(-8) {
		t.Errorf("http to 127.0.0.2 (a loopback address outside http_private_ranges): %v", o)
	}

	checkGoSkillEvents(t, db, secret["id"], fetched["id"])
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out)
	}
}

// checkGoSkillEvents checks what TestServeRunsGoSkills left in the
// ledger: the stored row, the channel's message, the secret's and the
// http request's capability.used events, and no event holding the secret.
func checkGoSkillEvents(t *testing.T, db *testdb.DB, secretID, httpID any) {
	t.Helper()
	ctx := context.Background()
	var stored []byte
	if err := db.Pool.QueryRow(ctx, "SELECT value FROM ledger.skill_storage WHERE key = 'acme/capdemo/greeting'").Scan(&stored); err != nil || string(stored) != "hello from Go" {
		t.Errorf("ledger.skill_storage acme/capdemo/greeting = %q, %v", stored, err)
	}
	var msg struct {
		Text string `json:"text"`
	}
	if err := db.Pool.QueryRow(ctx, "SELECT payload->'message' FROM ledger.events WHERE stream = 'channel:acme.alerts' AND type = 'channel.message'").Scan(&msg); err != nil || msg.Text != "deployed" {
		t.Errorf("channel:acme.alerts's message: %+v, %v", msg, err)
	}
	uses := func(id any) []string {
		rows, err := db.Pool.Query(ctx, `SELECT concat_ws(' ', payload->>'class', payload->>'name', payload->>'outcome')
			FROM ledger.events WHERE stream = 'request:' || $1 AND type = 'capability.used' ORDER BY version`, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := uses(secretID), []string{"secret DEMO_TOKEN ok"}; !slices.Equal(got, want) {
		t.Errorf("the secret op's capability.used events: %q", got)
	}
	if got, want := uses(httpID), []string{"http 127.0.0.2 private_address"}; !slices.Equal(got, want) {
		t.Errorf("the http op's capability.used events: %q", got)
	}
	var leaks int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events WHERE strpos(payload::text, $1) > 0 OR strpos(metadata::text, $1) > 0",
		capdemoSecret).Scan(&leaks); err != nil || leaks != 0 {
		t.Errorf("%d events hold the secret (%v)", leaks, err)
	}
}
