package projector

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Status is one projection's place in the log.
type Status struct {
	Name string
	// Mode is "inline" (written by the ledger's writers in their own
	// transactions; never behind) or "async" (applied by the engine).
	Mode       string
	Checkpoint ledger.Cursor // the last event passed; zero before the first
	State      string        // "active" or "failed"
	// EventsBehind is how many events read_all could deliver after the
	// checkpoint now (counted up to 1,000,000).
	EventsBehind int64
	// SecondsBehind is the age of the first of them; 0 when caught up.
	SecondsBehind float64
	AppliedTotal  int64 // events handed to apply functions and committed
	// FailedAt, FailedType and LastError describe a failure; FailedType is
	// "" when the checkpoint itself was at fault.
	FailedAt   *ledger.Cursor
	FailedType string
	LastError  string
	UpdatedAt  time.Time
	// Rebuilding is the position a rebuild in progress has reached, or nil.
	Rebuilding *int64
}

// Status returns every projection that has ever run, by name, registered
// with this engine or not.
func (e *Engine) Status(ctx context.Context) ([]Status, error) {
	return status(ctx, e.pool, nil)
}

func status(ctx context.Context, db ledger.DBTX, name *string) ([]Status, error) {
	rows, err := db.Query(ctx, queryStatus, name)
	if err != nil {
		return nil, fmt.Errorf("projector: status: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Status, error) {
		var s Status
		var tx string
		var failedTx, failedType, lastError *string
		var failedPos *int64
		if err := row.Scan(&s.Name, &s.Mode, &tx, &s.Checkpoint.Position, &s.State, &s.AppliedTotal,
			&failedTx, &failedPos, &failedType, &lastError, &s.UpdatedAt, &s.EventsBehind, &s.SecondsBehind,
			&s.Rebuilding); err != nil {
			return s, err
		}
		var err error
		if s.Checkpoint.TxID, err = strconv.ParseUint(tx, 10, 64); err != nil {
			return s, err
		}
		if failedTx != nil && failedPos != nil {
			at := ledger.Cursor{Position: *failedPos}
			if at.TxID, err = strconv.ParseUint(*failedTx, 10, 64); err != nil {
				return s, err
			}
			s.FailedAt = &at
		}
		s.FailedType = deref(failedType)
		s.LastError = deref(lastError)
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("projector: status: %w", err)
	}
	return out, nil
}

// Retry clears the failure of projection name, recording
// projection.retried: its runner applies the failed event again, from the
// checkpoint, on its next poll. ErrNotFailed when it is not failed,
// ErrUnknownProjection when it has never run.
func (e *Engine) Retry(ctx context.Context, name, note string) error {
	if err := RetryProjection(ctx, e.pool, name, note); err != nil {
		return err
	}
	e.logger.Info("projection retried", "projection", name)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
