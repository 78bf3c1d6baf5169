package vet

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/scaffold"
)

func opened(t *testing.T, publisher string) (*artifact.Artifact, ed25519.PublicKey) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	if _, err := scaffold.Write(dir, "acme.hello", "wat"); err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	data, err := artifact.Pack(dir, priv, artifact.Info{SkillID: "acme.hello", Version: "0.1.0", Publisher: publisher})
	if err != nil {
		t.Fatal(err)
	}
	a, err := artifact.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	return a, pub
}

func TestVet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, pub := opened(t, "acme")
	d := artifact.PayloadDigestString(a.PayloadDigest)
	v, err := Vet(ctx, a.Files, a.Signature, pub, Expect{SkillID: "acme.hello", Version: "0.1.0", Publisher: "acme", PayloadDigest: d}, Options{})
	if err != nil || !v.Report.Passed() || v.Manifest.SkillID != "acme.hello" {
		t.Fatalf("%+v %v", v, err)
	}
	changed := map[string][]byte{}
	for p, b := range a.Files {
		changed[p] = b
	}
	changed["modules/hello.wasm"] = append([]byte(nil), a.Files["modules/hello.wasm"]...)
	changed["modules/hello.wasm"][20] ^= 1
	if _, err := Vet(ctx, changed, a.Signature, pub, Expect{PayloadDigest: d}, Options{}); !errors.Is(err, ErrTampered) {
		t.Errorf("a changed module: %v", err)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := Vet(ctx, a.Files, a.Signature, other, Expect{}, Options{}); !errors.Is(err, ErrTampered) {
		t.Errorf("another trusted key: %v", err)
	}
	if _, err := Vet(ctx, a.Files, a.Signature, pub, Expect{Version: "0.2.0"}, Options{}); err == nil || !strings.Contains(err.Error(), "installed as 0.2.0") {
		t.Errorf("a version other than installed: %v", err)
	}
	// Signed as publisher "evil", though the manifest says acme.
	b, bpub := opened(t, "evil")
	if _, err := Vet(ctx, b.Files, b.Signature, bpub, Expect{}, Options{}); err == nil || !strings.Contains(err.Error(), "is not the signer's") {
		t.Errorf("a manifest whose publisher is not the signer: %v", err)
	}
}
