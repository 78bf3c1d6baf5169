package projector

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/ledger"
)

// Statuses returns every projection that has ever run, by name, as
// Engine.Status does, for callers without an engine (the command line).
func Statuses(ctx context.Context, db ledger.DBTX) ([]Status, error) {
	return status(ctx, db, nil)
}

// RetryProjection clears the failure of projection name, recording
// projection.retried with note, as Engine.Retry does, for callers without
// an engine. ErrNotFailed when it is not failed, ErrUnknownProjection when
// it has never run.
func RetryProjection(ctx context.Context, db ledger.DBTX, name, note string) error {
	var noteArg *string
	if note != "" {
		noteArg = &note
	}
	var retried bool
	err := db.QueryRow(ctx, queryRetry, name, noteArg).Scan(&retried)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "P0002":
		return fmt.Errorf("%w: %s", ErrUnknownProjection, name)
	case err != nil:
		return fmt.Errorf("projector: retry %s: %w", name, err)
	case !retried:
		return fmt.Errorf("%w: %s", ErrNotFailed, name)
	}
	return nil
}
