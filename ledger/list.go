package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ListParams filter Client.List; a zero field matches every request.
type ListParams struct {
	State     State
	Principal string
	Tool      string
	RunID     string
	Since     time.Time // submitted at or after
	Until     time.Time // submitted before
	// Limit is the most requests returned, newest first: 50 when zero, at
	// most 1,000.
	Limit int
	// After continues a listing past the last request of its previous
	// page (nil: from the newest): only requests after it in the order,
	// submitted earlier or at the same time with a smaller id.
	After *ListCursor
}

// ListCursor is where a listing continues: a request's submitted_at and id.
type ListCursor struct {
	SubmittedAt time.Time
	ID          uuid.UUID
}

// MaxListLimit bounds ListParams.Limit.
const MaxListLimit = 1000

const queryListRequests = `SELECT id, principal, tool, run_id, state, error_kind, error, output, tier,
       attestation_digest, submitted_at, finished_at
FROM ledger.requests
WHERE ($1 = '' OR state = $1) AND ($2 = '' OR principal = $2) AND ($3 = '' OR tool = $3)
  AND ($4 = '' OR run_id = $4) AND ($5::timestamptz IS NULL OR submitted_at >= $5)
  AND ($6::timestamptz IS NULL OR submitted_at < $6)
  AND ($8::timestamptz IS NULL OR (submitted_at, id) < ($8, $9::uuid))
ORDER BY submitted_at DESC, id DESC
LIMIT $7`

// List returns the requests the caller may see (a submitter its own
// principal's, auditors and administrators all) that match p, newest first.
func (c *Client) List(ctx context.Context, p ListParams) ([]Request, error) {
	if p.Limit == 0 {
		p.Limit = 50
	}
	if p.Limit < 1 || p.Limit > MaxListLimit {
		return nil, fmt.Errorf("ledger: list: %w: limit %d is not between 1 and %d", ErrInvalidInput, p.Limit, MaxListLimit)
	}
	if p.State != "" && !p.State.Valid() {
		return nil, fmt.Errorf("ledger: list: %w: no state %q", ErrInvalidInput, p.State)
	}
	var afterAt *time.Time
	var afterID *uuid.UUID
	if p.After != nil {
		afterAt, afterID = &p.After.SubmittedAt, &p.After.ID
	}
	rows, err := c.pool.Query(ctx, queryListRequests, pgx.QueryExecModeExec, string(p.State), p.Principal, p.Tool, p.RunID,
		nullTime(p.Since), nullTime(p.Until), p.Limit, afterAt, afterID)
	if err != nil {
		return nil, sqlError("list", err)
	}
	defer rows.Close()
	var out []Request
	for rows.Next() {
		var r Request
		var output []byte
		if err := rows.Scan(&r.ID, &r.Principal, &r.Tool, &r.RunID, &r.State, &r.ErrorKind, &r.Error, &output,
			&r.Tier, &r.AttestationDigest, &r.SubmittedAt, &r.FinishedAt); err != nil {
			return nil, sqlError("list", err)
		}
		r.Output = output
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, sqlError("list", err)
	}
	return out, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Approve lets a request waiting for approval run (ledger.approve). The
// caller must be an approver and not the submitter; a non-empty
// inputDigest ("sha256:<hex>") binds the approval to exactly that input.
// ErrWrongState: the request runs already, has ended or is approved.
func (c *Client) Approve(ctx context.Context, id uuid.UUID, note, inputDigest string) error {
	if _, err := c.pool.Exec(ctx, `SELECT ledger.approve($1, $2, $3)`, id, nullable(note), nullable(inputDigest)); err != nil {
		return sqlError("approve", err)
	}
	return nil
}

// DenyApproval ends a request waiting for approval as denied
// (ledger.deny_approval), under Approve's rules.
func (c *Client) DenyApproval(ctx context.Context, id uuid.UUID, note string) error {
	if _, err := c.pool.Exec(ctx, `SELECT ledger.deny_approval($1, $2)`, id, nullable(note)); err != nil {
		return sqlError("deny approval", err)
	}
	return nil
}

// Awaiting is a request that waits for approval, with the input an
// approval decides: ledger.awaiting_approval's row.
type Awaiting struct {
	ID             uuid.UUID `json:"id"`
	Principal      string    `json:"principal"`
	Tool           string    `json:"tool"`
	RunID          *string   `json:"run_id"`
	IdempotencyKey *string   `json:"idempotency_key"`
	// InputDigest is what Approve binds to: "sha256:<hex>" of the input
	// as submitted.
	InputDigest string    `json:"input_digest"`
	SubmittedAt time.Time `json:"submitted_at"`
	// Input is tool.requested's input as recorded (redacted as stored).
	Input json.RawMessage `json:"input"`
}

// MaxAwaitingLimit is the most rows AwaitingApproval returns at once.
const MaxAwaitingLimit = 10000

const queryAwaitingApproval = `SELECT id, principal, tool, run_id, idempotency_key, input_digest, submitted_at, input::text
FROM ledger.awaiting_approval($1, $2)`

// AwaitingApproval lists the requests that wait for approval, oldest
// first, at most limit of them (1 to MaxAwaitingLimit), each with its
// input (ledger.awaiting_approval). Approvers, auditors and
// administrators may call it; anyone else gets ErrNotPermitted.
func (c *Client) AwaitingApproval(ctx context.Context, limit int) ([]Awaiting, error) {
	return AwaitingApproval(ctx, c.pool, limit)
}

// AwaitingApproval is Client.AwaitingApproval on a pool, connection or
// transaction the caller owns.
func AwaitingApproval(ctx context.Context, db DBTX, limit int) ([]Awaiting, error) {
	return awaitingApproval(ctx, db, limit, nil)
}

// AwaitingApprovalOf is request id's AwaitingApproval row: ErrNotFound
// when it does not wait for approval (or does not exist).
func (c *Client) AwaitingApprovalOf(ctx context.Context, id uuid.UUID) (*Awaiting, error) {
	return AwaitingApprovalOf(ctx, c.pool, id)
}

// AwaitingApprovalOf is Client.AwaitingApprovalOf on a pool, connection
// or transaction the caller owns.
func AwaitingApprovalOf(ctx context.Context, db DBTX, id uuid.UUID) (*Awaiting, error) {
	rows, err := awaitingApproval(ctx, db, 1, &id)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("ledger: awaiting approval: %w: request %s does not wait for approval", ErrNotFound, id)
	}
	return &rows[0], nil
}

func awaitingApproval(ctx context.Context, db DBTX, limit int, id *uuid.UUID) ([]Awaiting, error) {
	if limit < 1 || limit > MaxAwaitingLimit {
		return nil, fmt.Errorf("ledger: awaiting approval: %w: limit %d is not between 1 and %d", ErrInvalidInput, limit, MaxAwaitingLimit)
	}
	rows, err := db.Query(ctx, queryAwaitingApproval, limit, id)
	if err != nil {
		return nil, sqlError("awaiting approval", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Awaiting, error) {
		var a Awaiting
		var input *string
		err := row.Scan(&a.ID, &a.Principal, &a.Tool, &a.RunID, &a.IdempotencyKey, &a.InputDigest, &a.SubmittedAt, &input)
		if input != nil {
			a.Input = json.RawMessage(*input)
		}
		return a, err
	})
	if err != nil {
		return nil, sqlError("awaiting approval", err)
	}
	return out, nil
}
