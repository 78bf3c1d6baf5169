//go:build linux

package processrun

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WorkspaceKey names the run (or, for a request without a run, the
// request) a workspace directory belongs to.
type WorkspaceKey struct {
	Principal string
	// RunID is the run of <root>/<principal>/<run_id>; "" for a request
	// workspace, <root>/<principal>/_req-<RequestID>.
	RunID     string
	RequestID uuid.UUID
}

// RunActivity is what the ledger knows of one workspace's run.
type RunActivity struct {
	// Known: the ledger has a request, a background process or a run row
	// of it.
	Known bool
	// Busy: a request of it is not final (pending, awaiting_approval,
	// running), or a background process of it is running.
	Busy bool
	// Idle is how long ago, by the database's clock, the newest of its
	// requests finished, its newest background process ended or the run
	// ended (ledger.end_run), whichever is latest; negative when none of
	// those has happened.
	Idle time.Duration
}

// Activity is the ledger as the workspace sweeper reads it.
type Activity interface {
	// Activity returns what the ledger knows of each key, in order.
	Activity(ctx context.Context, keys []WorkspaceKey) ([]RunActivity, error)
}

// DBTX is what LedgerActivity's query runs on: a pool, a connection or a
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// LedgerActivity reads ledger.requests, ledger.processes and ledger.runs
// over an executor's login (ledger_executor may read all three, for every
// principal). None of them is written by a sandboxed program.
type LedgerActivity struct {
	db DBTX
}

// NewLedgerActivity returns LedgerActivity over db.
func NewLedgerActivity(db DBTX) *LedgerActivity { return &LedgerActivity{db: db} }

var _ Activity = (*LedgerActivity)(nil)

// queryActivity answers for every workspace at once: one pass over each
// table, joined to the list of keys, whatever their number. Request
// workspaces (an empty run_id) match their request by id; run ids are never
// empty, nor is any request id the zero uuid.
const queryActivity = `WITH ws AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[]) WITH ORDINALITY AS w(principal, run_id, request_id, i)
), req AS (
    SELECT w.i, r.state, r.finished_at
    FROM ws w JOIN ledger.requests r ON r.principal = w.principal AND r.run_id = w.run_id
    UNION ALL
    SELECT w.i, r.state, r.finished_at
    FROM ws w JOIN ledger.requests r ON r.id = w.request_id AND r.principal = w.principal
), ra AS (
    SELECT i, count(*) FILTER (WHERE state NOT IN ('succeeded', 'failed', 'denied', 'cancelled')) AS open,
           max(finished_at) AS last
    FROM req GROUP BY i
), pa AS (
    SELECT w.i, count(*) FILTER (WHERE p.state = 'running') AS open, max(p.ended_at) AS last
    FROM ws w JOIN ledger.processes p ON p.principal = w.principal AND p.run_id = w.run_id
    GROUP BY w.i
), rn AS (
    SELECT w.i, r.ended_at
    FROM ws w JOIN ledger.runs r ON r.principal = w.principal AND r.run_id = w.run_id
)
SELECT w.i,
       ra.i IS NOT NULL OR pa.i IS NOT NULL OR rn.i IS NOT NULL,
       coalesce(ra.open, 0) + coalesce(pa.open, 0) > 0,
       (extract(epoch FROM clock_timestamp() - greatest(ra.last, pa.last, rn.ended_at)) * 1000000)::bigint
FROM ws w LEFT JOIN ra USING (i) LEFT JOIN pa USING (i) LEFT JOIN rn USING (i)
ORDER BY w.i`

// Activity implements Activity.
func (a *LedgerActivity) Activity(ctx context.Context, keys []WorkspaceKey) ([]RunActivity, error) {
	principals := make([]string, len(keys))
	runs := make([]string, len(keys))
	requests := make([]uuid.UUID, len(keys))
	for i, k := range keys {
		principals[i], runs[i], requests[i] = k.Principal, k.RunID, k.RequestID
		if k.RunID != "" {
			requests[i] = uuid.Nil
		}
	}
	rows, err := a.db.Query(ctx, queryActivity, principals, runs, requests)
	if err != nil {
		return nil, fmt.Errorf("processrun: workspace activity: %w", err)
	}
	defer rows.Close()
	out := make([]RunActivity, len(keys))
	for rows.Next() {
		var i int64
		var ra RunActivity
		var idle *int64
		if err := rows.Scan(&i, &ra.Known, &ra.Busy, &idle); err != nil {
			return nil, fmt.Errorf("processrun: workspace activity: %w", err)
		}
		if i < 1 || i > int64(len(keys)) {
			return nil, fmt.Errorf("processrun: workspace activity: row %d of %d", i, len(keys))
		}
		ra.Idle = -1
		if idle != nil {
			ra.Idle = time.Duration(*idle) * time.Microsecond
		}
		out[i-1] = ra
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("processrun: workspace activity: %w", err)
	}
	return out, nil
}
