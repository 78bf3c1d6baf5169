package registry

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/ledger"
)

const (
	sqlArtifact = `
SELECT a.publisher, a.key_id, a.public_key, a.signature, k.public_key, k.revoked_at IS NOT NULL, k.publisher
FROM ledger.skill_artifacts a LEFT JOIN ledger.skill_trust_keys k ON k.key_id = a.key_id
WHERE a.digest = $1`
	sqlFiles = `SELECT path, content FROM ledger.skill_files WHERE artifact_digest = $1`
)

// ErrUntrusted is returned by Load for an artifact whose signing key is
// no longer trusted.
var ErrUntrusted = errors.New("registry: the artifact's key is not trusted")

// Load returns an installed artifact's stored files, its recorded
// signature and the trusted key that signature must verify under.
func Load(ctx context.Context, db ledger.DBTX, digest string) (map[string][]byte, artifact.Signature, ed25519.PublicKey, error) {
	var sig artifact.Signature
	var pub, trusted []byte
	var revoked *bool
	var trustedFor *string
	err := db.QueryRow(ctx, sqlArtifact, digest).Scan(&sig.Publisher, &sig.KeyID, &pub, &sig.Sig, &trusted, &revoked, &trustedFor)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sig, nil, fmt.Errorf("%w: artifact %s", ErrNotFound, digest)
	}
	if err != nil {
		return nil, sig, nil, fmt.Errorf("skill artifact: %w", err)
	}
	sig.PublicKey = pub
	switch {
	case trusted == nil:
		return nil, sig, nil, fmt.Errorf("%w: key %s is not in the trust store", ErrUntrusted, sig.KeyID)
	case *revoked:
		return nil, sig, nil, fmt.Errorf("%w: key %s has been revoked", ErrUntrusted, sig.KeyID)
	case *trustedFor != sig.Publisher:
		return nil, sig, nil, fmt.Errorf("%w: key %s is trusted for publisher %s, not %s", ErrUntrusted, sig.KeyID, *trustedFor, sig.Publisher)
	}
	files, err := Files(ctx, db, digest)
	if err != nil {
		return nil, sig, nil, err
	}
	return files, sig, ed25519.PublicKey(trusted), nil
}

// Files returns an installed artifact's stored files by path, whatever
// its key's trust is now (verify --replay checks a module against the
// digest an attestation signed); ErrNotFound when none is stored.
func Files(ctx context.Context, db ledger.DBTX, digest string) (map[string][]byte, error) {
	rows, err := db.Query(ctx, sqlFiles, digest)
	if err != nil {
		return nil, fmt.Errorf("skill files: %w", err)
	}
	files := map[string][]byte{}
	var path string
	var content []byte
	if _, err := pgx.ForEachRow(rows, []any{&path, &content}, func() error {
		files[path] = content
		return nil
	}); err != nil {
		return nil, fmt.Errorf("skill files: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: artifact %s", ErrNotFound, digest)
	}
	return files, nil
}
