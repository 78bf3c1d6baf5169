package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RunBudget is a run's budget as executors charge it (ledger.run_budget).
type RunBudget struct {
	// MaxCalls is what ledger.set_run_budget set; nil means the
	// executors' executor.default_max_calls_per_run.
	MaxCalls *int `json:"max_calls"`
	Used     int  `json:"used"`
	Ended    bool `json:"ended"`
}

// Remaining is the calls left under limit, the run's MaxCalls when set,
// else defaultMax; never negative.
func (b RunBudget) Remaining(defaultMax int) int {
	limit := defaultMax
	if b.MaxCalls != nil {
		limit = *b.MaxCalls
	}
	return max(limit-b.Used, 0)
}

// RunBudget returns the budget of run runID of principal ("" for the
// caller's own). ErrNotFound when the login may not see that principal's
// runs (only auditors, executors and admins see others').
func (c *Client) RunBudget(ctx context.Context, principal, runID string) (RunBudget, error) {
	var b RunBudget
	err := c.pool.QueryRow(ctx, queryRunBudget, runID, nullable(principal)).Scan(&b.MaxCalls, &b.Used, &b.Ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return RunBudget{}, fmt.Errorf("ledger: run budget of %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return RunBudget{}, sqlError("run budget", err)
	}
	return b, nil
}
