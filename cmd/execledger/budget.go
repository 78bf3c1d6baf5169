package main

import (
	"context"
	"fmt"

	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/ledger"
)

// runBudgetView is a run's budget as submit --wait, status and requests
// show print it.
type runBudgetView struct {
	Limit     int  `json:"limit"`
	Used      int  `json:"used"`
	Remaining int  `json:"remaining"`
	Ended     bool `json:"ended"`
	// Default: no ledger.set_run_budget; Limit is
	// executor.default_max_calls_per_run as this command's configuration
	// has it (the executors' should be the same).
	Default bool `json:"default"`
}

// readBudget reads the budget of r's run; nil when r has no run or the
// login may not read it.
func readBudget(ctx context.Context, c *ledger.Client, r *ledger.Request, defaultMax int) *runBudgetView {
	if r == nil || r.RunID == nil {
		return nil
	}
	b, err := c.RunBudget(ctx, r.Principal, *r.RunID)
	if err != nil {
		return nil // an older database without ledger.run_budget, or another principal's run
	}
	v := &runBudgetView{Limit: defaultMax, Used: b.Used, Remaining: b.Remaining(defaultMax), Ended: b.Ended, Default: b.MaxCalls == nil}
	if b.MaxCalls != nil {
		v.Limit = *b.MaxCalls
	}
	return v
}

func (b runBudgetView) String() string {
	s := fmt.Sprintf("%d of %d calls used, %d left", b.Used, b.Limit, b.Remaining)
	if b.Default {
		s += " (the default, executor.default_max_calls_per_run; ledger.set_run_budget sets a run's own)"
	}
	if b.Ended {
		s += "; the run has ended"
	}
	return s
}

// defaultMaxCalls is executor.default_max_calls_per_run as this command's
// configuration has it (the caller has loaded it once already, so it
// loads).
func (e *env) defaultMaxCalls() int {
	cfg, err := e.loadConfig(e.config)
	if err != nil {
		return config.DefaultMaxCallsPerRun
	}
	return cfg.Executor.DefaultMaxCallsPerRun
}
