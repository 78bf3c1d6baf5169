package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// answerWAT is a skill whose run returns 42.
const answerWAT = `(module (func (export "run") (result i32) i32.const 42))`

// answerModule compiles answerWAT with wat2wasm into dir and returns the
// module's sha256.
func answerModule(t *testing.T, dir string) string {
	t.Helper()
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (WABT) is needed to build the test's WebAssembly module: %v", err)
	}
	src := filepath.Join(dir, "answer.wat")
	if err := os.WriteFile(src, []byte(answerWAT), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "answer.wasm")
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
