package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testdb"
)

// answerWAT is a skill whose run returns 42.
const answerWAT = `(module (func (export "run") (result i32) i32.const 42))`

// answerModule compiles answerWAT with wat2wasm into dir and returns the
// module's sha256.
func answerModule(t *testing.T, dir string) string {
	t.Helper()
	return watModule(t, dir, "answer", answerWAT)
}

// watModule compiles src with wat2wasm into dir/name.wasm and returns the
// module's sha256.
func watModule(t *testing.T, dir, name, wat string) string {
	t.Helper()
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (WABT) is needed to build the test's WebAssembly module: %v", err)
	}
	src := filepath.Join(dir, name+".wat")
	if err := os.WriteFile(src, []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".wasm")
	if b, err := exec.Command(wat2wasm, src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// wasmConfig writes a configuration file in dir that registers
// answer.wasm (a path relative to the file) as tool acme.answer.
func wasmConfig(t *testing.T, dir, digest string) string {
	t.Helper()
	p := filepath.Join(dir, "execledger.toml")
	body := "[[wasm.modules]]\ntool = \"acme.answer\"\npath = \"answer.wasm\"\nsha256 = \"" + digest + "\"\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeRunsWasmSkills runs a registered skill module in tier A
// through ledger.submit.
func TestServeRunsWasmSkills(t *testing.T) {
	t.Parallel()
	db, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true")
	dir := t.TempDir()
	cfg := wasmConfig(t, dir, answerModule(t, dir))
	stop, out := startCommand(t, environ, "serve", "--config", cfg)

	req := submitJSON(t, db, "acme.answer", `{}`, "r1")
	output, _ := req["output"].(map[string]any)
	if req["state"] != "succeeded" || req["tier"] != "A" || len(output) != 1 || output["result"] != float64(42) {
		t.Fatalf("acme.answer: %v\n%s", req, out)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out)
	}
}

// TestServeRefusesAWasmModuleWithAnotherDigest checks that serve does not
// start when a registered module's file is not the pinned one.
func TestServeRefusesAWasmModuleWithAnotherDigest(t *testing.T) {
	t.Parallel()
	_, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true")
	dir := t.TempDir()
	got := answerModule(t, dir)
	pinned := strings.Repeat("ab", 32)
	r := execute(t, environ, "", "serve", "--config", wasmConfig(t, dir, pinned))
	if r.code != exitError {
		t.Fatalf("serve started with a module whose digest differs: %+v", r)
	}
	for _, want := range []string{"acme.answer", "answer.wasm has sha256 " + got, "not the pinned " + pinned} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("serve's error lacks %q: %s", want, r.stderr)
		}
	}
}

// listenWAT is a skill that imports WASI's sock_accept, as one serving a
// socket it was handed would.
const listenWAT = `(module
  (import "wasi_snapshot_preview1" "sock_accept" (func $accept (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32) (call $accept (i32.const 3) (i32.const 0) (i32.const 0))))`

// TestServeRefusesAWasmModuleImportingSockets: serve does not start when a
// registered module imports a WASI socket function, though the module and
// the policy both grant an http host: no capability grants raw sockets.
func TestServeRefusesAWasmModuleImportingSockets(t *testing.T) {
	t.Parallel()
	_, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true")
	dir := t.TempDir()
	digest := watModule(t, dir, "listen", listenWAT)
	cfg := filepath.Join(dir, "execledger.toml")
	body := "[wasm]\npolicy_http_hosts = [\"api.example.com\"]\n\n[[wasm.modules]]\ntool = \"acme.listen\"\npath = \"listen.wasm\"\nsha256 = \"" +
		digest + "\"\n[wasm.modules.capabilities]\nhttp_hosts = [\"api.example.com\"]\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execute(t, environ, "", "serve", "--config", cfg)
	if r.code != exitError {
		t.Fatalf("serve started with a module importing sock_accept: %+v", r)
	}
	for _, want := range []string{"acme.listen", "function wasi_snapshot_preview1.sock_accept", "no capability grants raw sockets"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("serve's error lacks %q: %s", want, r.stderr)
		}
	}
}

// notesWAT is a WASI skill with two entrypoints using storage prefix 0
// and secret 0: remember stores "hello-ledger" at key "note" and prints
// {"secret":"<the secret>"}; recall prints {"note":"<the value of note>"}.
// Each traps when a capability is refused.
const notesWAT = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "secret-handle" (func $secret_handle (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "storage-handle" (func $storage_handle (param i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "secret_get" (func $secret_get (param i32 i32 i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "storage_get" (func $storage_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "storage_put" (func $storage_put (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 100) "note")
  (data (i32.const 104) "hello-ledger")
  (data (i32.const 1013) "{\"secret\":\"")
  (data (i32.const 2039) "{\"note\":\"")
  ;; $print closes the string ending at end with "} and writes it from ptr on stdout.
  (func $print (param $ptr i32) (param $end i32)
    (i32.store16 (local.get $end) (i32.const 0x7d22))
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (i32.add (i32.sub (local.get $end) (local.get $ptr)) (i32.const 2)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "remember") (local $n i32)
    (if (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 4) (i32.const 104) (i32.const 12))
      (then unreachable))
    (local.set $n (call $secret_get (call $secret_handle (i32.const 0)) (i32.const 1024) (i32.const 256)))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then unreachable))
    (call $print (i32.const 1013) (i32.add (i32.const 1024) (local.get $n))))
  (func (export "recall") (local $n i32)
    (local.set $n (call $storage_get (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 4) (i32.const 2048) (i32.const 256)))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then unreachable))
    (call $print (i32.const 2039) (i32.add (i32.const 2048) (local.get $n)))))`

const notesSecret = "s3cr3t-ledger-XYZ"

// TestServeGrantsWasmCapabilities runs a skill granted a storage prefix
// and a secret (from secrets_dir) through serve: what one request stores
// in ledger.skill_storage the next reads, the echoed secret is redacted
// and the capability.used events do not hold it.
func TestServeGrantsWasmCapabilities(t *testing.T) {
	t.Parallel()
	db, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true")
	dir := t.TempDir()
	digest := watModule(t, dir, "notes", notesWAT)
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "API_TOKEN"), []byte(notesSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "execledger.toml")
	body := `[wasm]
policy_secrets = ["API_TOKEN"]
policy_storage_prefixes = ["acme/notes/"]
secrets_dir = "` + secrets + `"
`
	for _, e := range []string{"remember", "recall"} {
		body += `
[[wasm.modules]]
tool = "acme.` + e + `"
path = "notes.wasm"
sha256 = "` + digest + `"
entrypoint = "` + e + `"
[wasm.modules.capabilities]
secrets = ["API_TOKEN"]
storage_prefixes = ["acme/notes/"]
`
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	stop, out := startCommand(t, environ, "serve", "--config", cfg)

	remembered := submitJSON(t, db, "acme.remember", `{}`, "r1")
	if output, _ := remembered["output"].(map[string]any); remembered["state"] != "succeeded" || output["secret"] != "<redacted>" {
		t.Fatalf("acme.remember: %v\n%s", remembered, out)
	}
	recalled := submitJSON(t, db, "acme.recall", `{}`, "r1")
	if output, _ := recalled["output"].(map[string]any); recalled["state"] != "succeeded" || output["note"] != "hello-ledger" {
		t.Fatalf("acme.recall: %v\n%s", recalled, out)
	}

	ctx := context.Background()
	var stored []byte
	if err := db.Pool.QueryRow(ctx, "SELECT value FROM ledger.skill_storage WHERE key = 'acme/notes/note'").Scan(&stored); err != nil || string(stored) != "hello-ledger" {
		t.Errorf("ledger.skill_storage acme/notes/note = %q, %v", stored, err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT concat_ws(' ', payload->>'class', payload->>'name', payload->>'key', payload->>'outcome')
		FROM ledger.events WHERE stream = 'request:' || $1 AND type = 'capability.used' ORDER BY version`, remembered["id"])
	if err != nil {
		t.Fatal(err)
	}
	uses, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"storage acme/notes/ acme/notes/note ok", "secret API_TOKEN ok"}; !slices.Equal(uses, want) {
		t.Errorf("acme.remember's capability.used events: %q", uses)
	}
	var leaks int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events WHERE strpos(payload::text, $1) > 0 OR strpos(metadata::text, $1) > 0",
		notesSecret).Scan(&leaks); err != nil || leaks != 0 {
		t.Errorf("%d events hold the secret (%v)", leaks, err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out)
	}
}

// randomLoopWAT calls WASI random_get for 16 MiB in a loop for ever: host
// work that the module's own instructions barely count. Before host calls
// charged fuel and checked the call's time, such a call ran past its
// timeout for minutes, ignored ledger.cancel and kept serve from shutting
// down.
const randomLoopWAT = `(module
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (memory (export "memory") 257)
  (func (export "run") (result i32)
    (loop $again
      (drop (call $random (i32.const 0) (i32.const 16777216)))
      (br $again))
    (i32.const 0)))`

// TestServeEndsWasmCallsThatLoopOnHostCalls: through ledger.submit, a
// tier A call looping on a host call ends at its timeout, at
// ledger.cancel, on running out of fuel, and when serve shuts down.
func TestServeEndsWasmCallsThatLoopOnHostCalls(t *testing.T) {
	t.Parallel()
	db, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true",
		"EXECLEDGER_EXECUTOR_SHUTDOWN_GRACE=1s")
	dir := t.TempDir()
	digest := watModule(t, dir, "loop", randomLoopWAT)
	cfg := filepath.Join(dir, "execledger.toml")
	body := `[[wasm.modules]]
tool = "acme.loop"
path = "loop.wasm"
sha256 = "` + digest + `"
timeout = "2s"
fuel_limit = 9000000000000000000

[[wasm.modules]]
tool = "acme.loop_fuel"
path = "loop.wasm"
sha256 = "` + digest + `"
timeout = "60s"
fuel_limit = 200000000

[[wasm.modules]]
tool = "acme.loop_long"
path = "loop.wasm"
sha256 = "` + digest + `"
timeout = "1h"
fuel_limit = 9000000000000000000
`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	stop, out := startCommand(t, environ, "serve", "--config", cfg)
	// Each call below loops for ever unless its timeout, its fuel, a
	// cancellation or the shutdown stops it: that it ends at all, in the
	// way asked, is what is checked. waitFinal's bound only catches a call
	// that does not end; how soon they end belongs to the benchmarks.
	id := submitNoWait(t, db, "acme.loop", "r-timeout")
	if state, kind := waitFinal(t, db, id); state != "failed" || kind != "timed_out" {
		t.Fatalf("a 2 s call looping on random_get: %s %s\n%s", state, kind, out)
	}
	r := submitJSON(t, db, "acme.loop_fuel", `{}`, "r-fuel")
	if r["state"] != "failed" || r["error_kind"] != "quota_exceeded" {
		t.Fatalf("a call looping on random_get with 2e8 fuel: %v", r)
	}

	ctx := context.Background()
	// acme.loop_long has an hour's timeout and no fuel to speak of:
	// nothing else can end it first, however busy the machine.
	id = submitNoWait(t, db, "acme.loop_long", "r-cancel")
	waitRequestState(t, db, id, "running")
	if _, err := db.Pool.Exec(ctx, "SELECT ledger.cancel($1)", id); err != nil {
		t.Fatal(err)
	}
	if state, kind := waitFinal(t, db, id); state != "cancelled" || kind != "cancelled" {
		t.Fatalf("ledger.cancel of a call looping on random_get: %s %s", state, kind)
	}

	// The executor's shutdown stops it too, and serve exits.
	id = submitNoWait(t, db, "acme.loop_long", "r-shutdown")
	waitRequestState(t, db, id, "running")
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d with a call looping on random_get: %s", code, out)
	}
	if state, kind := waitFinal(t, db, id); state != "cancelled" || kind != "cancelled" {
		t.Fatalf("the call serve stopped: %s %s", state, kind)
	}
}

// submitNoWait submits tool with input {} in run and returns its id.
func submitNoWait(t *testing.T, db *testdb.DB, tool, run string) string {
	t.Helper()
	var id string
	if err := db.Pool.QueryRow(context.Background(), "SELECT ledger.submit($1, '{}'::jsonb, $2)::text", tool, run).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// waitRequestState waits until request id is in state.
func waitRequestState(t *testing.T, db *testdb.DB, id, state string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var got string
		if err := db.Pool.QueryRow(context.Background(), "SELECT state FROM ledger.requests WHERE id = $1", id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s is %s, not %s", id, got, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFinal waits until request id is final and returns its state and
// error kind.
func waitFinal(t *testing.T, db *testdb.DB, id string) (state, kind string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var k *string
		if err := db.Pool.QueryRow(context.Background(), "SELECT state, error_kind FROM ledger.requests WHERE id = $1", id).Scan(&state, &k); err != nil {
			t.Fatal(err)
		}
		if state != "pending" && state != "running" && state != "awaiting_approval" {
			if k != nil {
				kind = *k
			}
			return state, kind
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s still %s", id, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
