package executor

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Config tunes an Executor. Zero values take the defaults of WithDefaults.
type Config struct {
	Label          string        // this executor in events, attestations and claims
	Workers        int           // requests run at once
	ClaimBatch     int           // requests claimed per transaction
	Lease          time.Duration // how long a claim holds without a heartbeat
	PollInterval   time.Duration // claim attempts when no NOTIFY arrives
	RescueInterval time.Duration // how often expired leases and approvals are looked for
	ShutdownGrace  time.Duration // how long in-flight work may finish after shutdown begins
	ToolTimeout    time.Duration // the longest any call may run
	// DefaultMaxCallsPerRun is a run's budget unless ledger.set_run_budget set one.
	DefaultMaxCallsPerRun int
	// Sensitive tools wait for ledger.approve before they run.
	Sensitive []string
	// ApprovalTimeout ends a request that waited this long for approval.
	ApprovalTimeout time.Duration
	// CompleteBatch is the most completions written in one transaction.
	CompleteBatch int
	// MaxAttempts bounds the claims of one request: a lease lost on the
	// last attempt ends the request failed (runtime_failure) instead of
	// requeueing it. A requeued request keeps its place in the queue, so
	// without a bound a request that kills its executor would be the first
	// claimed after every restart.
	MaxAttempts int
	// Metrics, when set, receives the executor's measurements.
	Metrics *Metrics
	// Skills, when set, serves the tools of installed skills (tier A);
	// registered tools take precedence over a skill tool of the same id.
	Skills Skills
	// TracerProvider, when set, receives a trace per request (trace.go);
	// nil turns tracing off.
	TracerProvider trace.TracerProvider
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	seti := func(i *int, v int) {
		if *i == 0 {
			*i = v
		}
	}
	if c.Label == "" {
		c.Label = "executor"
	}
	seti(&c.Workers, 64)
	seti(&c.ClaimBatch, 64)
	seti(&c.DefaultMaxCallsPerRun, 4)
	seti(&c.CompleteBatch, 256)
	seti(&c.MaxAttempts, 10)
	set(&c.Lease, 30*time.Second)
	set(&c.PollInterval, time.Second)
	set(&c.RescueInterval, 5*time.Second)
	set(&c.ShutdownGrace, 10*time.Second)
	set(&c.ToolTimeout, 30*time.Second)
	set(&c.ApprovalTimeout, 15*time.Minute)
	return c
}

// Validate reports the first unusable setting.
func (c Config) Validate() error {
	var errs []error
	if c.Workers < 1 || c.ClaimBatch < 1 || c.CompleteBatch < 1 || c.MaxAttempts < 1 {
		errs = append(errs, errors.New("executor: workers, claim_batch, complete_batch and max_attempts must be positive"))
	}
	if c.Lease < time.Second {
		errs = append(errs, fmt.Errorf("executor: lease %s is shorter than 1s", c.Lease))
	}
	if c.DefaultMaxCallsPerRun < 0 {
		errs = append(errs, errors.New("executor: default_max_calls_per_run must not be negative"))
	}
	if c.ToolTimeout <= 0 || c.PollInterval <= 0 || c.RescueInterval <= 0 || c.ApprovalTimeout <= 0 || c.ShutdownGrace < 0 {
		errs = append(errs, errors.New("executor: durations must be positive"))
	}
	return errors.Join(errs...)
}
