package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/audit"
	"github.com/execledger/execledger/internal/skill/manifest"
	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/internal/skill/vet"
	"github.com/execledger/execledger/ledger"
)

func newSkillPackageCmd(e *env) *cobra.Command {
	var key, out string
	var force bool
	cmd := &cobra.Command{
		Use:     "package DIR --key K --out FILE",
		Short:   "Build the signed, deterministic artifact of the skill in DIR",
		Example: `  execledger skill package acme.hello --key publisher.key --out acme.hello.skill`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if key == "" || out == "" {
				return fail(exitUsage, "--key and --out are required")
			}
			return runSkillPackage(e, args[0], key, out, force)
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the publisher's Ed25519 private key `FILE` (execledger keygen --out FILE)")
	cmd.Flags().StringVar(&out, "out", "", "the artifact `FILE` to write")
	cmd.Flags().BoolVar(&force, "force", false, "replace --out if it exists")
	e.unusedConfigFlag(cmd)
	return cmd
}

func runSkillPackage(e *env, dir, key, out string, force bool) error {
	raw, err := os.ReadFile(filepath.Join(dir, manifest.FileName))
	if err != nil {
		return fail(exitError, "%v", err)
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		return fail(exitError, "%s: %v", filepath.Join(dir, manifest.FileName), err)
	}
	priv, err := attest.LoadPrivateKey(key)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	data, err := artifact.Pack(dir, priv, artifact.Info{SkillID: m.SkillID, Version: m.Version, Publisher: m.Publisher,
		Builder: "execledger skill package"})
	if err != nil {
		return fail(exitError, "%v", err)
	}
	a, err := artifact.Open(data)
	if err != nil {
		return fail(exitError, "the artifact does not open: %v", err)
	}
	for _, mod := range m.Modules() {
		if _, ok := a.Files[mod]; !ok {
			return fail(exitError, "%s names module %s, which %s does not hold (build it first)", manifest.FileName, mod, dir)
		}
	}
	if err := writeNew(out, data, force); err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "%s: skill %s %s, %d files, %d bytes\nartifact: %s\npayload:  %s\nkey:      %s (publisher %s)\n",
		out, m.SkillID, m.Version, len(a.Files), len(data), a.Digest, artifact.PayloadDigestString(a.PayloadDigest),
		a.Signature.KeyID, m.Publisher)
	return nil
}

// writeNew writes data to path, refusing to replace it unless force, by a
// rename so that a reader never sees half an artifact.
func writeNew(path string, data []byte, force bool) error {
	if _, err := os.Lstat(path); err == nil && !force {
		return fmt.Errorf("%s exists (--force replaces it)", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".skill-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// installReport is `skill install --json` and `skill audit --json`.
type installReport struct {
	SkillID        string        `json:"skill_id"`
	Version        string        `json:"version"`
	Status         string        `json:"status"`
	ArtifactDigest string        `json:"artifact_digest"`
	PayloadDigest  string        `json:"payload_digest"`
	KeyID          string        `json:"key_id"`
	Trust          string        `json:"trust"` // operator or tofu
	Checks         []audit.Check `json:"checks"`
	FailedChecks   []audit.Check `json:"failed_checks"`
	TimingsMS      timings       `json:"timings_ms"`
}

type timings struct {
	Verify     float64 `json:"verify"`     // read and open the archive, check its limits, integrity list and signature
	Audit      float64 `json:"audit"`      // the manifest and every audit check, instrument and compile included
	Validate   float64 `json:"validate"`   // wazero's validation of the modules as given
	Instrument float64 `json:"instrument"` // fuel instrumentation of the modules (and table bounding)
	Compile    float64 `json:"compile"`    // wazero's compilation of the instrumented modules
	Total      float64 `json:"total"`      // everything, the database's part included
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newSkillInstallCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install FILE",
		Short: "Verify an artifact against the trust store, record it and audit it: verified, or quarantined",
		Long: `Install verifies an artifact against the trust store, records it and audits it. It prints
the state (verified, or quarantined with every failed check) and the time spent (verify;
audit: validate, instrument, compile). It needs ledger_skill_admin.`,
		Example: `  execledger skill install acme.hello.skill
  execledger skill install acme.hello.skill --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSkillInstall(cmd.Context(), e, args[0])
		},
	}
	e.jsonFlag(cmd, "print the outcome as JSON")
	e.configFlag(cmd)
	return cmd
}

func runSkillInstall(ctx context.Context, e *env, file string) error {
	start := time.Now()
	a, err := readArtifact(file)
	if err != nil {
		return fail(exitError, "%s: %v", file, err)
	}
	cfg, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	trusted, tofu, err := trustedKey(ctx, pool, cfg, a)
	if err != nil {
		return fail(exitError, "%s: %v", file, err)
	}
	verified := time.Since(start)
	v, err := vet.Vet(ctx, a.Files, a.Signature, trusted, vet.Expect{}, skillOptions(cfg))
	if err != nil {
		return fail(exitError, "%s: %v", file, err)
	}
	rep := reportOf(v, a)
	rep.TimingsMS.Audit = ms(time.Since(start) - verified)
	rep.Trust = map[bool]string{true: "tofu", false: "operator"}[tofu]
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		r, err := registry.InstallArtifact(ctx, tx, registry.Install{Digest: a.Digest, SkillID: v.Manifest.SkillID,
			Version: v.Manifest.Version, Publisher: v.Manifest.Publisher, KeyID: a.Signature.KeyID, PublicKey: a.Signature.PublicKey,
			PayloadDigest: v.PayloadDigest, Signature: a.Signature.Sig, Tools: toolIDs(v.Manifest), Size: int64(len(a.Raw)),
			Files: a.Files, TOFU: tofu})
		if err != nil {
			return err
		}
		if r, err = registry.RecordAudit(ctx, tx, v.Manifest.SkillID, a.Digest, v.Report.Passed(), v.Report.Checks, registry.TriggerInstall); err != nil {
			return err
		}
		rep.Status = r.Status
		return nil
	})
	if err != nil {
		return e.skillError(err)
	}
	rep.TimingsMS.Verify, rep.TimingsMS.Total = ms(verified), ms(time.Since(start))
	return e.printInstall(rep, e.json)
}

// skillArtifact is an opened artifact and its bytes.
type skillArtifact struct {
	*artifact.Artifact
	Raw []byte
}

// readArtifact reads and opens an artifact file, refusing one larger than
// an artifact may be before reading it.
func readArtifact(path string) (skillArtifact, error) {
	f, err := os.Open(path)
	if err != nil {
		return skillArtifact{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, artifact.MaxArchive+1))
	if err != nil {
		return skillArtifact{}, err
	}
	if len(data) > artifact.MaxArchive {
		return skillArtifact{}, fmt.Errorf("larger than an artifact may be (%d bytes)", artifact.MaxArchive)
	}
	a, err := artifact.Open(data)
	if err != nil {
		return skillArtifact{}, err
	}
	return skillArtifact{a, data}, nil
}

// trustedKey finds the key a's signature must verify under: a trusted
// key of the trust store, or, with trust on first use and no key of the
// publisher yet, the artifact's own (which the install then pins).
func trustedKey(ctx context.Context, db ledger.DBTX, cfg config.Config, a skillArtifact) (ed25519.PublicKey, bool, error) {
	keys, err := registry.Keys(ctx, db)
	if err != nil {
		return nil, false, err
	}
	sig := a.Signature
	var publisherKnown bool
	for _, k := range keys {
		publisherKnown = publisherKnown || k.Publisher == sig.Publisher
		if k.KeyID != sig.KeyID {
			continue
		}
		switch {
		case k.RevokedAt != nil:
			return nil, false, fmt.Errorf("signed by key %s of publisher %s, revoked at %s", k.KeyID, k.Publisher, k.RevokedAt.UTC().Format(time.RFC3339))
		case k.Publisher != sig.Publisher:
			return nil, false, fmt.Errorf("signed by key %s, which is trusted for publisher %s, not %s", k.KeyID, k.Publisher, sig.Publisher)
		}
		if err := a.Verify(k.PublicKey); err != nil {
			return nil, false, err
		}
		return k.PublicKey, false, nil
	}
	switch {
	case !cfg.Skills.TrustOnFirstUse:
		return nil, false, fmt.Errorf("signed by key %s of publisher %s, which is not in the trust store (execledger skill trust add; or [skills] trust_on_first_use)", sig.KeyID, sig.Publisher)
	case publisherKnown:
		return nil, false, fmt.Errorf("signed by key %s of publisher %s, whose trusted keys are others (trust on first use pins a publisher's first key only)", sig.KeyID, sig.Publisher)
	}
	if err := a.Verify(sig.PublicKey); err != nil {
		return nil, false, err
	}
	return sig.PublicKey, true, nil
}

func toolIDs(m *manifest.Manifest) []string {
	ids := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		ids[i] = t.ID
	}
	return ids
}

func reportOf(v *vet.Vetted, a skillArtifact) installReport {
	t := v.Report.Timing
	failed := v.Report.Failed()
	if failed == nil {
		failed = []audit.Check{}
	}
	return installReport{SkillID: v.Manifest.SkillID, Version: v.Manifest.Version, ArtifactDigest: a.Digest,
		PayloadDigest: v.PayloadDigest, KeyID: a.Signature.KeyID, Checks: v.Report.Checks, FailedChecks: failed,
		TimingsMS: timings{Validate: ms(t.Validate), Instrument: ms(t.Instrument), Compile: ms(t.Compile)}}
}

func (e *env) printInstall(rep installReport, asJSON bool) error {
	if asJSON {
		return printJSON(e, rep)
	}
	w := e.io.out
	fmt.Fprintf(w, "skill %s %s: %s\nartifact: %s\nkey:      %s (%s)\n", rep.SkillID, rep.Version, rep.Status, rep.ArtifactDigest,
		rep.KeyID, rep.Trust)
	for _, c := range rep.FailedChecks {
		fmt.Fprintf(w, "  failed: %s\n", checkLine(c))
	}
	switch rep.Status {
	case "quarantined":
		fmt.Fprintf(w, "quarantined: two skill admins other than its installer must approve it (execledger skill approve %s) before it can be enabled\n", rep.SkillID)
	case "verified":
		fmt.Fprintf(w, "verified: enable it to run it (execledger skill enable %s)\n", rep.SkillID)
	}
	t := rep.TimingsMS
	fmt.Fprintf(w, "time: verify %.1f ms, audit %.1f ms (validate %.1f ms, instrument %.1f ms, compile %.1f ms), total %.1f ms\n",
		t.Verify, t.Audit, t.Validate, t.Instrument, t.Compile, t.Total)
	return nil
}

func newSkillAuditCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit ID",
		Short: "Audit the installed skill again (a failure quarantines it)",
		Example: `  execledger skill audit acme.hello
  execledger skill audit acme.hello --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSkillAudit(cmd.Context(), e, args[0])
		},
	}
	e.jsonFlag(cmd, "print the outcome as JSON")
	e.configFlag(cmd)
	return cmd
}

func runSkillAudit(ctx context.Context, e *env, id string) error {
	cfg, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	start := time.Now()
	s, err := registry.Get(ctx, pool, id)
	if err != nil {
		return e.skillError(err)
	}
	files, sig, trusted, err := registry.Load(ctx, pool, s.ArtifactDigest)
	if err != nil {
		return e.skillError(err)
	}
	trust, err := keySource(ctx, pool, s.KeyID)
	if err != nil {
		return e.skillError(err)
	}
	loaded := time.Since(start)
	v, err := vet.Vet(ctx, files, sig, trusted, vet.Expect{SkillID: s.ID, Version: s.Version, Publisher: s.Publisher,
		PayloadDigest: s.PayloadDigest}, skillOptions(cfg))
	passed, checks := err == nil && v.Report.Passed(), []audit.Check{}
	var t timings
	if err != nil {
		checks = []audit.Check{{Name: "artifact_integrity", Detail: err.Error()}}
	} else {
		checks = v.Report.Checks
		rt := v.Report.Timing
		t = timings{Validate: ms(rt.Validate), Instrument: ms(rt.Instrument), Compile: ms(rt.Compile)}
	}
	t.Verify, t.Audit = ms(loaded), ms(time.Since(start)-loaded)
	r, err := registry.RecordAudit(ctx, pool, s.ID, s.ArtifactDigest, passed, checks, registry.TriggerOperator)
	if err != nil {
		return e.skillError(err)
	}
	t.Total = ms(time.Since(start))
	rep := installReport{SkillID: s.ID, Version: s.Version, Status: r.Status, ArtifactDigest: s.ArtifactDigest,
		PayloadDigest: s.PayloadDigest, KeyID: s.KeyID, Trust: trust, Checks: checks, FailedChecks: failedOf(checks), TimingsMS: t}
	return e.printInstall(rep, e.json)
}

// keySource is how the trust store came to trust key id: "operator"
// (skill trust add) or "tofu" (pinned by a first install).
func keySource(ctx context.Context, db ledger.DBTX, id string) (string, error) {
	keys, err := registry.Keys(ctx, db)
	if err != nil {
		return "", err
	}
	for _, k := range keys {
		if k.KeyID == id {
			return k.Source, nil
		}
	}
	return "", fmt.Errorf("%w: key %s is not in the trust store", registry.ErrUntrusted, id)
}

func failedOf(checks []audit.Check) []audit.Check {
	out := []audit.Check{}
	for _, c := range checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}
