package executor

import (
	"errors"
	"fmt"
	"time"

	"github.com/execledger/execledger/internal/config"

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
	// UnsupportedHint, when set, says how to make this executor run a
	// tool it does not support (which configuration key turns it on); it
	// is added to the denial's message. "" adds nothing.
	UnsupportedHint func(tool string) string
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
	// The defaults are the configuration's (config.Default), but for
	// CompleteBatch, which is not a configuration key.
	d := config.Default().Executor
	if c.Label == "" {
		c.Label = "executor"
	}
	seti(&c.Workers, d.Workers)
	seti(&c.ClaimBatch, d.ClaimBatch)
	seti(&c.DefaultMaxCallsPerRun, d.DefaultMaxCallsPerRun)
	seti(&c.CompleteBatch, 256)
	seti(&c.MaxAttempts, d.MaxAttempts)
	set(&c.Lease, d.Lease.Duration)
	set(&c.PollInterval, d.PollInterval.Duration)
	set(&c.RescueInterval, d.RescueInterval.Duration)
	set(&c.ShutdownGrace, d.ShutdownGrace.Duration)
	set(&c.ToolTimeout, d.ToolTimeout.Duration)
	set(&c.ApprovalTimeout, d.ApprovalTimeout.Duration)
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
