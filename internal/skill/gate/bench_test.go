package gate_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/gate"
	"github.com/execledger/execledger/internal/skill/manifest"
	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/internal/skill/scaffold"
	"github.com/execledger/execledger/internal/skill/vet"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// BenchmarkSkillCall is a trivial skill's call end to end (submit, claim,
// authorize, run, complete, attest), the same module either registered in
// the configuration ([[wasm.modules]]: no trust check) or installed as a
// skill (the gate: state, trust store, stored files hashed, signature
// verified, schema checked, at every claim). Each iteration is one burst
// of 64 calls of each, alternating which goes first, on one database, so
// that the log's growth and the machine's noise fall on both alike; it
// reports each one's time per call and the installed skill's overhead.
func BenchmarkSkillCall(b *testing.B) {
	f := benchSetup(b)
	var took [2]time.Duration
	tools := [2]string{"acme.registered", "acme.hello"}
	i := 0
	for b.Loop() {
		for k := range 2 {
			which := (i + k) % 2
			start := time.Now()
			f.burst(b, tools[which], 64)
			took[which] += time.Since(start)
		}
		i++
	}
	calls := float64(64 * i)
	b.ReportMetric(float64(took[0].Microseconds())/calls, "registered-µs/call")
	b.ReportMetric(float64(took[1].Microseconds())/calls, "installed-µs/call")
	b.ReportMetric(100*(float64(took[1])/float64(took[0])-1), "overhead-%")
}

// burst submits n calls of tool and waits for all of them.
func (f bench) burst(b *testing.B, tool string, n int) {
	ctx := context.Background()
	ids := make([]uuid.UUID, 0, n)
	for i := range n {
		id, err := f.client.Submit(ctx, ledger.SubmitParams{Tool: tool, Input: map[string]any{"x": i}})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		r, err := f.client.Await(actx, id)
		cancel()
		if err != nil || r.State != ledger.StateSucceeded {
			b.Fatalf("%s: %+v %v", tool, r, err)
		}
	}
}

type bench struct {
	client *ledger.Client
}

func benchSetup(b *testing.B) bench {
	ctx := context.Background()
	db := testdb.New(b)
	dir := filepath.Join(b.TempDir(), "hello")
	if _, err := scaffold.Write(dir, "acme.hello", "wat"); err != nil {
		b.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	data, err := artifact.Pack(dir, priv, artifact.Info{SkillID: "acme.hello", Version: "0.1.0", Publisher: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	a, err := artifact.Open(data)
	if err != nil {
		b.Fatal(err)
	}
	m, err := manifest.Parse(a.Manifest())
	if err != nil {
		b.Fatal(err)
	}
	admin := db.LoginRole(b, "admin", "ledger_skill_admin")
	if _, err := registry.InstallArtifact(ctx, admin.Pool, registry.Install{Digest: a.Digest, SkillID: m.SkillID, Version: m.Version,
		Publisher: m.Publisher, KeyID: a.Signature.KeyID, PublicKey: a.Signature.PublicKey,
		PayloadDigest: artifact.PayloadDigestString(a.PayloadDigest), Signature: a.Signature.Sig, Tools: []string{"acme.hello"},
		Size: int64(len(data)), Files: a.Files, TOFU: true}); err != nil {
		b.Fatal(err)
	}
	if _, err := registry.RecordAudit(ctx, admin.Pool, m.SkillID, a.Digest, true, []any{}, registry.TriggerInstall); err != nil {
		b.Fatal(err)
	}
	if r, err := registry.Enable(ctx, admin.Pool, m.SkillID, ""); err != nil || !r.OK {
		b.Fatalf("%+v %v", r, err)
	}

	wasmPath := filepath.Join(dir, "modules", "hello.wasm")
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	execRole := db.LoginRole(b, "", "ledger_executor")
	host, err := wasmrun.New(ctx, wasmrun.Config{Modules: []wasmrun.Module{{ToolID: "acme.registered", Path: wasmPath,
		SHA256: hex.EncodeToString(sum[:])}}, Storage: wasmrun.PGStorage{Pool: execRole.Pool}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { host.Close(context.Background()) })
	pol, err := policy.FromSources([]policy.Source{{Name: "bench.cedar", Text: []byte(
		`permit (principal, action in [Action::"tool.execute", Action::"skill.execute"], resource);`)}})
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	cfg := executor.Config{Label: "bench", Skills: gate.New(host, vet.Options{}, gate.Limits{Fuel: wasmrun.DefaultFuelLimit,
		Timeout: 30 * time.Second, MemoryPages: wasmrun.DefaultMemoryLimitPages}, logger)}
	var tools []executor.Tool
	for _, t := range host.Tools() {
		tools = append(tools, t)
	}
	x, err := executor.New(execRole.Pool, cfg, pol, attest.NewSigner(priv), logger, tools...)
	if err != nil {
		b.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- x.Run(rctx) }()
	b.Cleanup(func() { cancel(); <-done })
	sub := db.LoginRole(b, "svc", "ledger_submitter")
	c := ledger.NewClient(sub.Pool)
	b.Cleanup(c.Close)
	// Warm both up: the first call of an artifact vets it and compiles
	// its module once.
	for _, tool := range []string{"acme.registered", "acme.hello"} {
		id, err := c.Submit(ctx, ledger.SubmitParams{Tool: tool, Input: map[string]any{}})
		if err != nil {
			b.Fatal(err)
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		r, err := c.Await(actx, id)
		cancel()
		if err != nil || r.State != ledger.StateSucceeded {
			b.Fatalf("warm-up %s: %+v %v", tool, r, err)
		}
	}
	return bench{client: c}
}
