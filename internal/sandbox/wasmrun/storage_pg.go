package wasmrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// storageGetSQL reads ledger.skill_storage (migrations/005_skill_storage.sql).
const storageGetSQL = `SELECT value FROM ledger.skill_storage WHERE key = $1`

// PGStorage is the Storage of a running executor: ledger.skill_storage,
// one row per key (the granted prefix included), reached through Pool as
// a login role holding ledger_executor. It only reads: what a call puts
// is returned in its result (executor.Result.StorageWrites) and written by
// the executor in the transaction that records the call's outcome, so a
// call that fails leaves nothing, and the table has one writer.
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
