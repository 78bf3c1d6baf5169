package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/replay"
)

// otherAnswerModule compiles a skill that returns 43 into dir as
// answer.wasm and returns its sha256: registered as acme.answer, it is
// not the module a call of answerWAT ran.
func otherAnswerModule(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "answer.wat")
	if err := os.WriteFile(src, []byte(`(module (func (export "run") (result i32) i32.const 43))`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "answer.wasm")
	if b, err := exec.Command("wat2wasm", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// TestVerifyReplay runs a registered skill through serve, then replays
// the call with verify --replay: with the module that ran, with another
// module under the same tool id, with a fuel limit it cannot finish in;
// and asks to replay a built-in call and an unknown request.
func TestVerifyReplay(t *testing.T) {
	t.Parallel()
	db, environ := processEnv(t, "C", "EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true")
	dir := t.TempDir()
	cfg := wasmConfig(t, dir, answerModule(t, dir))
	stop, out := startCommand(t, environ, "serve", "--config", cfg)
	req := submitJSON(t, db, "acme.answer", `{"q": "life"}`, "r1")
	echo := submitJSON(t, db, "echo", `{"text": "hi"}`, "r1")
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, out)
	}
	id, _ := req["id"].(string)
	if req["state"] != "succeeded" || id == "" {
		t.Fatalf("acme.answer: %v\n%s", req, out)
	}

	r := execute(t, environ, "", "verify", "--replay", id, "--config", cfg)
	for _, want := range []string{"signature ok", "outcome matches: succeeded", "output digest matches: sha256:", "fuel matches: ", "\nok\n"} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("verify --replay: code %d, want %q in\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	t.Logf("verify --replay:\n%s", r.stdout)
	r = execute(t, environ, "", "verify", "--replay", id, "--config", cfg, "--json")
	var rep replay.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitOK || !rep.OK || rep.FuelUsed.Recorded == nil ||
		*rep.FuelUsed.Recorded <= 0 || rep.OutputDigest.Recorded != rep.OutputDigest.Replayed {
		t.Errorf("verify --replay --json: %v %+v", err, r)
	}

	// Less fuel than the call used: the replay runs out, not ok.
	r = execute(t, append(environ, "EXECLEDGER_WASM_FUEL_LIMIT=1"), "", "verify", "--replay", id, "--config", cfg)
	if r.code != exitNotOK || !strings.Contains(r.stdout, "outcome differs: recorded succeeded, replayed failed: quota_exceeded") ||
		!strings.Contains(r.stdout, "not ok") {
		t.Errorf("verify --replay with fuel_limit 1: %+v", r)
	}

	// Another key did not sign it.
	key := filepath.Join(t.TempDir(), "other.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	r = execute(t, environ, "", "verify", "--replay", id, "--config", cfg, "--pubkey", key+".pub")
	if r.code != exitNotOK || !strings.Contains(r.stderr, "its attestation does not verify") {
		t.Errorf("verify --replay with another key: %+v", r)
	}

	// Another module under the same tool id is refused before it runs.
	other := t.TempDir()
	r = execute(t, environ, "", "verify", "--replay", id, "--config", wasmConfig(t, other, otherAnswerModule(t, other)))
	if r.code != exitError || !strings.Contains(r.stderr, "module digest mismatch") {
		t.Errorf("verify --replay with another module: %+v", r)
	}

	echoID, _ := echo["id"].(string)
	r = execute(t, environ, "", "verify", "--replay", echoID, "--config", cfg)
	if r.code != exitError || !strings.Contains(r.stderr, "only tier A calls are replayed") {
		t.Errorf("verify --replay of echo: %+v", r)
	}
	r = execute(t, environ, "", "verify", "--replay", uuid.NewString(), "--config", cfg)
	if r.code != exitNotFound || !strings.Contains(r.stderr, "no request") {
		t.Errorf("verify --replay of an unknown id: %+v", r)
	}
	if r = execute(t, environ, "", "verify", "--config", cfg); r.code != exitUsage {
		t.Errorf("verify without --replay: %+v", r)
	}
}
