package replay

import (
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
)

// TestReplayableRefuses checks which attested calls a replay refuses to
// run again.
func TestReplayableRefuses(t *testing.T) {
	t.Parallel()
	ok := func() attest.Execution {
		return attest.Execution{Tool: "acme.answer", Tier: "A", Executor: "sandbox_tier_a", Decision: attest.DecisionAllow,
			Enforcement: map[string]any{"module_digest": "sha256:ab", "capabilities": map[string]any{"http": []any{}, "secret": []any{}}}}
	}
	if err := Replayable(ok()); err != nil {
		t.Fatalf("a deterministic call: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*attest.Execution)
		want string
	}{
		{"tier B", func(p *attest.Execution) { p.Tier, p.Executor = "B", "sandbox_tier_b" }, "only tier A calls"},
		{"plugin.run", func(p *attest.Execution) { p.Tool = "plugin.run" }, "only registered skills"},
		{"denied", func(p *attest.Execution) { p.Decision, p.DecisionReason = attest.DecisionDeny, "no_policy" }, "never ran"},
		{"timed out", func(p *attest.Execution) { p.TimedOut, p.ErrorKind = true, "timed_out" }, "wall clock"},
		{"cancelled", func(p *attest.Execution) { p.ErrorKind = "cancelled" }, "cancellation"},
		{"no module", func(p *attest.Execution) { delete(p.Enforcement, "module_digest") }, "no module_digest"},
		{"secret", func(p *attest.Execution) {
			p.Enforcement["capabilities"] = map[string]any{"secret": []any{"token"}}
		}, "granted secret capabilities [token]"},
	} {
		p := ok()
		tc.edit(&p)
		if err := Replayable(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestConfigPinsTheModuleThatRan: the replay runs the registered module
// only when its pinned digest is the one the attestation records.
func TestConfigPinsTheModuleThatRan(t *testing.T) {
	t.Parallel()
	w := config.Wasm{Engine: "wasmtime", MemoryLimitPages: 16, FuelLimit: 1000,
		Modules: []config.WasmModule{{Tool: "acme.answer", Path: "answer.wasm", SHA256: "ab", FuelLimit: 500}}}
	p := attest.Execution{Tool: "acme.answer", Enforcement: map[string]any{"module_digest": "sha256:ab"}}
	cfg, digest, err := Config(w, p)
	if err != nil || digest != "sha256:ab" || len(cfg.Modules) != 1 || !filepath.IsAbs(cfg.Modules[0].Path) ||
		cfg.Modules[0].FuelLimit != 500 || cfg.FuelLimit != 1000 || cfg.MemoryLimitPages != 16 {
		t.Fatalf("Config: %+v %q %v", cfg, digest, err)
	}
	p.Enforcement["module_digest"] = "sha256:cd"
	if _, _, err := Config(w, p); err == nil || !strings.Contains(err.Error(), "module digest mismatch: [[wasm.modules]] acme.answer pins sha256:ab, the attested call ran sha256:cd") {
		t.Errorf("another module: %v", err)
	}
	p.Tool = "acme.other"
	if _, _, err := Config(w, p); err == nil || !strings.Contains(err.Error(), "no [[wasm.modules]] entry registers acme.other") {
		t.Errorf("an unregistered tool: %v", err)
	}
}

// TestCompare: outcome, output digest and fuel each match or not, and
// the report is OK only when all three do.
func TestCompare(t *testing.T) {
	t.Parallel()
	output := []byte(`{"answer":42}`)
	st := attest.NewStatement([]byte(`{}`), output, attest.Execution{RequestID: "r", Tool: "acme.answer",
		Resources: map[string]int64{"fuel_used": 10}})
	same := wasmrun.Replayed{Output: output, FuelUsed: 10, Metered: true}
	for _, tc := range []struct {
		name                  string
		r                     wasmrun.Replayed
		outcome, digest, fuel bool
	}{
		{"same", same, true, true, true},
		{"other output", wasmrun.Replayed{Output: []byte(`{"answer":41}`), FuelUsed: 10, Metered: true}, true, false, true},
		{"more fuel", wasmrun.Replayed{Output: output, FuelUsed: 11, Metered: true}, true, true, false},
		{"not metered", wasmrun.Replayed{Output: output}, true, true, false},
		{"failed", wasmrun.Replayed{Output: output, FuelUsed: 10, Metered: true, ErrorKind: "quota_exceeded"}, false, true, true},
	} {
		rep := Compare(&st, tc.r)
		if rep.Outcome.Match != tc.outcome || rep.OutputDigest.Match != tc.digest || rep.FuelUsed.Match != tc.fuel ||
			rep.OK != (tc.outcome && tc.digest && tc.fuel) || rep.RequestID != "r" || rep.Tool != "acme.answer" ||
			rep.Outcome.Recorded != "succeeded" || rep.OutputDigest.Recorded != attest.Digest(output) || *rep.FuelUsed.Recorded != 10 {
			t.Errorf("%s: %+v", tc.name, rep)
		}
		if tc.r.ErrorKind != "" && rep.Outcome.Replayed != "failed: "+tc.r.ErrorKind {
			t.Errorf("%s: outcome %q", tc.name, rep.Outcome.Replayed)
		}
	}
}

func testKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}
