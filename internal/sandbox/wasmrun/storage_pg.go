package wasmrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Queries of ledger.skill_storage (migrations/005_skill_storage.sql).
const (
	storageGetSQL = `SELECT value FROM ledger.skill_storage WHERE key = $1`
	storagePutSQL = `INSERT INTO ledger.skill_storage (key, value) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = clock_timestamp()`
)

// PGStorage is the Storage of a running executor: ledger.skill_storage,
// one row per key (the granted prefix included), reached through Pool as
// a login role holding ledger_executor. Each Put commits on its own: a
// value a call stores stays even when the call then fails.
type PGStorage struct {
	Pool ledger.DBTX
}

var _ Storage = PGStorage{}

// Get reads key's value.
func (s PGStorage) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := s.Pool.QueryRow(ctx, storageGetSQL, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("wasmrun: storage get: %w", err)
	}
	return v, true, nil
}

// Put sets key's value.
func (s PGStorage) Put(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{} // the column is NOT NULL; nil is the empty value
	}
	if _, err := s.Pool.Exec(ctx, storagePutSQL, key, value); err != nil {
		return fmt.Errorf("wasmrun: storage put: %w", err)
	}
	return nil
}
