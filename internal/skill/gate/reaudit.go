package gate

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/audit"
	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/internal/skill/vet"
)

// reauditLock is the advisory lock one re-audit holds, so that several
// serve processes do not record the same audit.
const reauditLock = `SELECT pg_try_advisory_xact_lock(hashtext('execledger.skill_reaudit'))`

// sqlReaudit lists the skills a re-audit vets: installed and audited once
// (an installed skill awaits its install audit), not removed, signed by a
// key still trusted (a revoked key has disabled its skills already).
const sqlReaudit = `
SELECT s.skill_id, s.status, s.artifact_digest, a.version, a.publisher, a.key_id, a.payload_digest, a.public_key, a.signature,
       k.public_key
FROM ledger.skills s
JOIN ledger.skill_artifacts a ON a.digest = s.artifact_digest
JOIN ledger.skill_trust_keys k ON k.key_id = a.key_id AND k.revoked_at IS NULL AND k.publisher = a.publisher
WHERE s.status NOT IN ('installed', 'removed')
ORDER BY s.skill_id`

// Reaudit vets every installed skill again and records the outcome: a
// failure quarantines the skill (unless it already is); a pass is
// recorded for skills that were cleared. It returns how many audits it
// recorded; 0 with no error when another process holds the re-audit.
func Reaudit(ctx context.Context, pool *pgxpool.Pool, opts vet.Options, trigger string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, reauditLock).Scan(&locked); err != nil || !locked {
			return err
		}
		rows, err := tx.Query(ctx, sqlReaudit)
		if err != nil {
			return err
		}
		type skill struct {
			id, status, digest, version, publisher, keyID, payloadDigest string
			pub, sig, trusted                                            []byte
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (skill, error) {
			var s skill
			return s, r.Scan(&s.id, &s.status, &s.digest, &s.version, &s.publisher, &s.keyID, &s.payloadDigest, &s.pub, &s.sig, &s.trusted)
		})
		if err != nil {
			return err
		}
		for _, s := range list {
			files, err := readFiles(ctx, tx, []string{s.digest})
			if err != nil {
				return err
			}
			checks, passed := vetChecks(ctx, files[s.digest], artifact.Signature{Publisher: s.publisher, KeyID: s.keyID,
				PublicKey: s.pub, Sig: s.sig}, ed25519.PublicKey(s.trusted),
				vet.Expect{SkillID: s.id, Version: s.version, Publisher: s.publisher, PayloadDigest: s.payloadDigest}, opts)
			if s.status == "quarantined" {
				continue // nothing an executor may change: only approvals clear it
			}
			if _, err := registry.RecordAudit(ctx, tx, s.id, s.digest, passed, checks, trigger); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("skill re-audit: %w", err)
	}
	return n, nil
}

// vetChecks is Vet's verdict as audit checks: a problem with the bytes or
// the signature is one failed check, artifact_integrity.
func vetChecks(ctx context.Context, files map[string][]byte, sig artifact.Signature, trusted ed25519.PublicKey,
	expect vet.Expect, opts vet.Options) ([]audit.Check, bool) {
	v, err := vet.Vet(ctx, files, sig, trusted, expect, opts)
	if err != nil {
		return []audit.Check{{Name: "artifact_integrity", Passed: false, Detail: err.Error()}}, false
	}
	return v.Report.Checks, v.Report.Passed()
}

// Run re-audits every interval, and soon after an operator changes the
// trust store (checked every poll), until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, opts vet.Options, interval, poll time.Duration, logger *slog.Logger) {
	logger = logger.With(slog.String("component", "skill_reaudit"))
	trust, _ := registry.TrustVersion(ctx, pool)
	next := time.Now().Add(interval)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		trigger := ""
		if v, err := registry.TrustVersion(ctx, pool); err == nil && v != trust {
			trust, trigger = v, registry.TriggerTrustStore
		}
		if time.Now().After(next) {
			next, trigger = time.Now().Add(interval), registry.TriggerSchedule
		}
		if trigger == "" {
			continue
		}
		n, err := Reaudit(ctx, pool, opts, trigger)
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			logger.Error("re-audit failed", slog.Any("error", err))
		case err == nil:
			logger.Info("skills re-audited", slog.String("trigger", trigger), slog.Int("recorded", n))
		}
	}
}
