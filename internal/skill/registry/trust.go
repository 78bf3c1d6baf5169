package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Key is a publisher key of the trust store.
type Key struct {
	KeyID        string     `json:"key_id"`
	Publisher    string     `json:"publisher"`
	PublicKey    []byte     `json:"public_key"`
	Source       string     `json:"source"` // operator or tofu
	AddedBy      string     `json:"added_by"`
	AddedAt      time.Time  `json:"added_at"`
	RevokedAt    *time.Time `json:"revoked_at,omitempty"`
	RevokedBy    string     `json:"revoked_by,omitempty"`
	RevokeReason string     `json:"revoke_reason,omitempty"`
}

// TrustAdd adds publisher's key to the trust store (trust.key_added on
// stream skill:trust).
func TrustAdd(ctx context.Context, db ledger.DBTX, publisher, keyID string, pub []byte, note string) error {
	if _, err := db.Exec(ctx, sqlTrustAdd, publisher, keyID, pub, nullable(note)); err != nil {
		return fmt.Errorf("skill trust add: %w", err)
	}
	return nil
}

// TrustRevoke revokes a key and disables the skills it signed; it returns
// how many it disabled.
func TrustRevoke(ctx context.Context, db ledger.DBTX, keyID, reason string) (int, error) {
	var n int
	if err := db.QueryRow(ctx, sqlTrustRevoke, keyID, nullable(reason)).Scan(&n); err != nil {
		return 0, fmt.Errorf("skill trust revoke: %w", err)
	}
	return n, nil
}

// Keys returns the trust store, revoked keys included.
func Keys(ctx context.Context, db ledger.DBTX) ([]Key, error) {
	rows, err := db.Query(ctx, sqlKeys)
	if err != nil {
		return nil, fmt.Errorf("skill trust list: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Key, error) {
		var k Key
		err := row.Scan(&k.KeyID, &k.Publisher, &k.PublicKey, &k.Source, &k.AddedBy, &k.AddedAt, &k.RevokedAt, &k.RevokedBy, &k.RevokeReason)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("skill trust list: %w", err)
	}
	return out, nil
}

// TrustVersion is the version of stream skill:trust: it grows whenever an
// operator changes the trust store, which is when skills are re-audited.
func TrustVersion(ctx context.Context, db ledger.DBTX) (int64, error) {
	var v int64
	if err := db.QueryRow(ctx, sqlTrustVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("skill trust version: %w", err)
	}
	return v, nil
}
