// Package vet decides whether an installed skill's artifact may run: the
// checks that `execledger skill install`, serve's scheduled re-audit and
// the executor (before a skill's first call with an artifact) share, so
// that all three reach the same verdict on the same bytes.
//
// Vet takes the artifact's files as they were stored, not the archive:
// it recomputes the payload digest from them, verifies the signature over
// it with the trusted publisher key, parses the manifest, checks that the
// manifest agrees with the signature (skill id, publisher, version as
// installed), and audits the modules and the capabilities requested
// (package audit). A problem with the bytes or the signature is an error
// (nothing can be said about the skill); a problem the audit finds is a
// failed check in the Report (the skill is quarantined).
package vet

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"

	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/audit"
	"github.com/execledger/execledger/internal/skill/manifest"
)

// Options are the configuration's part in the verdict.
type Options struct {
	Max  audit.Max      // the most a skill may request ([wasm] policy_* lists, [skills] allow_wildcards)
	Wasm wasmrun.Config // tier A's engine and limits
}

// Expect is what the ledger recorded at install: Vet fails when the
// files say otherwise.
type Expect struct {
	SkillID, Version, Publisher string
	PayloadDigest               string // "sha256:<hex>"
}

// Vetted is an artifact whose bytes and signature hold.
type Vetted struct {
	Manifest      *manifest.Manifest
	PayloadDigest string
	Report        audit.Report
}

// ErrTampered reports files whose digest is not the installed payload
// digest, or a signature that does not verify.
var ErrTampered = errors.New("vet: the stored artifact does not match what was installed")

// Vet checks files (every file of the artifact, signature.json included)
// signed by trusted, against expect.
func Vet(ctx context.Context, files map[string][]byte, sig artifact.Signature, trusted ed25519.PublicKey, expect Expect, opts Options) (*Vetted, error) {
	d := artifact.PayloadDigest(files)
	got := artifact.PayloadDigestString(d)
	if expect.PayloadDigest != "" && got != expect.PayloadDigest {
		return nil, fmt.Errorf("%w: its files hash to %s, not the installed payload digest %s", ErrTampered, got, expect.PayloadDigest)
	}
	if !trusted.Equal(sig.PublicKey) || !artifact.VerifySignature(trusted, d, sig.Sig) {
		return nil, fmt.Errorf("%w: the signature does not verify under the trusted key of publisher %s", ErrTampered, sig.Publisher)
	}
	m, err := manifest.Parse(files[manifest.FileName])
	if err != nil {
		return nil, fmt.Errorf("vet: %s: %w", manifest.FileName, err)
	}
	if err := agrees(m, sig, expect); err != nil {
		return nil, err
	}
	return &Vetted{Manifest: m, PayloadDigest: got, Report: audit.Run(ctx, auditInput(m, files, opts))}, nil
}

// agrees checks that the manifest names what the signature and the
// ledger do.
func agrees(m *manifest.Manifest, sig artifact.Signature, expect Expect) error {
	switch {
	case m.Publisher != sig.Publisher:
		return fmt.Errorf("vet: the manifest's publisher %q is not the signer's %q", m.Publisher, sig.Publisher)
	case expect.SkillID != "" && m.SkillID != expect.SkillID:
		return fmt.Errorf("%w: the manifest is skill %s, installed as %s", ErrTampered, m.SkillID, expect.SkillID)
	case expect.Version != "" && m.Version != expect.Version:
		return fmt.Errorf("%w: the manifest is version %s, installed as %s", ErrTampered, m.Version, expect.Version)
	case expect.Publisher != "" && m.Publisher != expect.Publisher:
		return fmt.Errorf("%w: the manifest's publisher is %s, installed as %s", ErrTampered, m.Publisher, expect.Publisher)
	}
	return nil
}

func auditInput(m *manifest.Manifest, files map[string][]byte, opts Options) audit.Input {
	in := audit.Input{Modules: map[string][]byte{}, Max: opts.Max, Wasm: opts.Wasm,
		Capabilities: audit.Capabilities{
			HTTPHosts: m.Capabilities.HTTPEgressAllowlist, Secrets: m.Capabilities.Secrets,
			StoragePrefixes: m.Capabilities.StoragePrefixes, Channels: m.Capabilities.Channels,
			FilesystemReadRoots: m.Capabilities.FilesystemReadRoots, FilesystemWriteRoots: m.Capabilities.FilesystemWriteRoots,
			WildcardOptIn: m.Capabilities.WildcardOptIn,
		}}
	for p, b := range files {
		if strings.HasPrefix(p, "modules/") && strings.HasSuffix(p, ".wasm") {
			in.Modules[p] = b
		}
	}
	for _, t := range m.Tools {
		in.Entrypoints = append(in.Entrypoints, audit.Entrypoint{Tool: t.ID, Module: t.Module, Export: t.Entrypoint})
	}
	return in
}
