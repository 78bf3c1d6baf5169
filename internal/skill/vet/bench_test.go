package vet

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/skill/artifact"
)

// BenchmarkInstall1MiB is what `skill install` spends on a skill whose
// module is about 1 MiB of code (76,000 small functions: 1.01 MiB), split as
// install reports it: verify (open the archive within its limits, the
// integrity list, the canonical encoding, the signature) and audit (the
// manifest and every check: fuel instrumentation and wazero's validation
// and compilation included, reported as instrument-ms and compile-ms).
// The database's part (storing the files, two events) is not in it.
func BenchmarkInstall1MiB(b *testing.B) {
	dir, priv := bigSkill(b)
	data, err := artifact.Pack(dir, priv, artifact.Info{SkillID: "acme.big", Version: "1.0.0", Publisher: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	a, err := artifact.Open(data)
	if err != nil {
		b.Fatal(err)
	}
	size := float64(len(a.Files["modules/big.wasm"])) / (1 << 20)
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			a, err := artifact.Open(data)
			if err != nil {
				b.Fatal(err)
			}
			if err := a.Verify(pub); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("audit", func(b *testing.B) {
		var val, inst, comp float64
		for b.Loop() {
			v, err := Vet(context.Background(), a.Files, a.Signature, pub, Expect{}, Options{})
			if err != nil || !v.Report.Passed() {
				b.Fatalf("%v %+v", err, v)
			}
			val += float64(v.Report.Timing.Validate.Microseconds()) / 1000
			inst += float64(v.Report.Timing.Instrument.Microseconds()) / 1000
			comp += float64(v.Report.Timing.Compile.Microseconds()) / 1000
		}
		b.ReportMetric(size, "module-MiB")
		b.ReportMetric(val/float64(b.N), "validate-ms")
		b.ReportMetric(inst/float64(b.N), "instrument-ms")
		b.ReportMetric(comp/float64(b.N), "compile-ms")
	})
}

// bigSkill writes a skill whose module holds about 1 MiB of code.
func bigSkill(b *testing.B) (string, ed25519.PrivateKey) {
	b.Helper()
	dir := b.TempDir()
	var w strings.Builder
	w.WriteString("(module\n  (memory (export \"memory\") 1)\n")
	const funcs = 76_000
	for i := range funcs {
		fmt.Fprintf(&w, "  (func $f%d (param i32) (result i32) (i32.add (i32.mul (local.get 0) (i32.const %d)) (i32.const 7)))\n", i, i+1000)
	}
	w.WriteString("  (func (export \"run\") (result i32) (call $f0 (i32.const 1))))\n")
	watPath := filepath.Join(dir, "big.wat")
	if err := os.WriteFile(watPath, []byte(w.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		b.Fatalf("wat2wasm (scripts/ensure-test-deps.sh) is needed: %v", err)
	}
	skill := filepath.Join(dir, "skill")
	if err := os.MkdirAll(filepath.Join(skill, "modules"), 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(tool, watPath, "-o", filepath.Join(skill, "modules", "big.wasm")).CombinedOutput(); err != nil {
		b.Fatalf("wat2wasm: %v\n%s", err, out)
	}
	manifest := `manifest_version = 1
skill_id = "acme.big"
name = "Big"
version = "1.0.0"
publisher = "acme"
[[tools]]
id = "acme.big"
name = "Big"
description = "A large module."
module = "modules/big.wasm"
input_schema = { type = "object" }
`
	if err := os.WriteFile(filepath.Join(skill, "skill.toml"), []byte(manifest), 0o644); err != nil {
		b.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	return skill, priv
}
