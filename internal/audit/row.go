package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Row is one row of ledger.audit_trail; execledger audit --json prints
// it as one line.
type Row struct {
	Position            int64           `json:"position"`
	TxID                string          `json:"tx_id"`
	RecordedAt          time.Time       `json:"recorded_at"`
	Kind                string          `json:"kind"` // decision or outcome
	EventType           string          `json:"event_type"`
	RequestID           uuid.UUID       `json:"request_id"`
	Principal           string          `json:"principal"`
	Tool                string          `json:"tool"`
	RunID               *string         `json:"run_id"`
	Attempt             *int32          `json:"attempt"`
	Decision            *string         `json:"decision"`
	Stage               *string         `json:"stage"`
	ReasonCode          *string         `json:"reason_code"`
	DeterminingPolicies []string        `json:"determining_policies"`
	PolicyDigest        *string         `json:"policy_digest"`
	Approver            *string         `json:"approver"`
	State               *string         `json:"state"`
	Tier                *string         `json:"tier"`
	ErrorKind           *string         `json:"error_kind"`
	Resources           json.RawMessage `json:"resources"`
	OutputBytes         *int64          `json:"output_bytes"`
	AttestationDigest   *string         `json:"attestation_digest"`
	AttestationPosition *int64          `json:"attestation_position"`
	RequestPosition     int64           `json:"request_position"`
}

func scanRow(row pgx.CollectableRow) (Row, error) {
	var r Row
	err := row.Scan(&r.Position, &r.TxID, &r.RecordedAt, &r.Kind, &r.EventType, &r.RequestID, &r.Principal, &r.Tool,
		&r.RunID, &r.Attempt, &r.Decision, &r.Stage, &r.ReasonCode, &r.DeterminingPolicies, &r.PolicyDigest, &r.Approver,
		&r.State, &r.Tier, &r.ErrorKind, &r.Resources, &r.OutputBytes, &r.AttestationDigest, &r.AttestationPosition,
		&r.RequestPosition)
	return r, err
}

// Each calls fn with each row f selects, in order, as they arrive, and
// reports whether more rows match than f's limit.
func Each(ctx context.Context, db ledger.DBTX, f Filter, fn func(Row) error) (more bool, err error) {
	q, args := Query(f)
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("audit trail: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if n++; f.Limit > 0 && n > f.Limit {
			return true, nil
		}
		r, err := scanRow(rows)
		if err != nil {
			return false, fmt.Errorf("audit trail: %w", err)
		}
		if err := fn(r); err != nil {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("audit trail: %w", err)
	}
	return false, nil
}

// Page reads the rows f selects, at most f.Limit of them, and the cursor
// to give as the next page's Filter.After: nil when no more rows match.
func Page(ctx context.Context, db ledger.DBTX, f Filter) ([]Row, *Cursor, error) {
	rows := []Row{}
	more, err := Each(ctx, db, f, func(r Row) error {
		rows = append(rows, r)
		return nil
	})
	if err != nil || !more || len(rows) == 0 {
		return rows, nil, err
	}
	next := rows[len(rows)-1].Cursor()
	return rows, &next, nil
}
