package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Modes.
const (
	ModeBurndown   = "burndown"
	ModeContinuous = "continuous"
)

// Systems. SystemBoth and SystemAll name sets of the others; Config.System
// also takes a comma-separated list of them (e.g. "river-audited,execledger").
const (
	SystemExecledger = "execledger"
	SystemRiver      = "river"
	// SystemRiverAudited is River where each job also appends its state
	// changes to an insert-only, SHA-256-chained audit table and signs its
	// outcome with Ed25519: what a team would build on River instead of
	// using Execledger (river_audited.go).
	SystemRiverAudited = "river-audited"
	SystemBoth         = "both" // river, execledger
	SystemAll          = "all"  // river, river-audited, execledger
)

// systemOrder is the order systems run in: the baselines first.
var systemOrder = []string{SystemRiver, SystemRiverAudited, SystemExecledger}

// SystemNames are the values Config.System takes, for usage texts and
// completion.
var SystemNames = []string{SystemExecledger, SystemRiver, SystemRiverAudited, SystemBoth, SystemAll}

// errNoRiver refuses the River systems in a build without River.
var errNoRiver = errors.New("bench: systems river, river-audited, both and all need River, which this binary is built without: " +
	"build it with -tags river (make bench does), or run --system execledger")

// DefaultRiverFetchCooldown is the River FetchCooldown of the baseline.
const DefaultRiverFetchCooldown = 2 * time.Millisecond

// DefaultAuditChains is river-audited's default number of audit chains:
// twice the connections its workers and submitters each hold, so that two
// transactions rarely wait for the same chain.
const DefaultAuditChains = 16

// maxAuditChains bounds Config.AuditChains (each chain is a lock a batch
// insert may take).
const maxAuditChains = 1024

// Config describes a benchmark run. Zero values take the defaults of
// WithDefaults.
type Config struct {
	// AdminURL is the server to create the benchmark databases on. Its role
	// must be able to create databases and, for Execledger's migrations,
	// roles: in practice a superuser.
	AdminURL string
	// PostmasterPID is the pid of AdminURL's postmaster when the run has
	// that cluster to itself (execledger bench --private-cluster): the
	// report then counts its CPU per request (Summary.CPU). 0: unknown.
	PostmasterPID int
	Mode          string // ModeBurndown or ModeContinuous
	// System is one of SystemNames or a comma-separated list of
	// execledger, river and river-audited; each runs once, baselines first.
	System     string
	N          int           // burndown: requests inserted before the workers start
	Duration   time.Duration // continuous: how long the submitters submit
	Submitters int           // concurrent submitting connections
	// Rate, in continuous mode, is the offered load in requests per
	// second over all submitters, on a fixed schedule (request k is due
	// at k/Rate after the start, whether or not the system keeps up); 0
	// submits as fast as the submitters can.
	Rate    float64
	Workers int // executor Workers and ClaimBatch; River queue MaxWorkers
	// ClaimBatch and CompleteBatch override the executor's batch sizes when
	// positive (experiments; by default ClaimBatch is Workers).
	ClaimBatch, CompleteBatch int
	// RiverFetchCooldown is River's FetchCooldown, the least time between
	// two fetches of a queue. River's default, river.FetchCooldownDefault
	// (100 ms), caps a queue of W workers at 10·W jobs/s, which would
	// measure the cooldown rather than River; the default here is 2 ms.
	RiverFetchCooldown time.Duration
	// AuditChains is how many SHA-256 chains river-audited's audit table
	// is striped over (a job's rows go to chain job_id mod AuditChains);
	// appends to one chain are serialized by a lock held until commit.
	AuditChains int
	// WorkSettings are PostgreSQL settings for the workers' connections of
	// both systems, e.g. plan_cache_mode (experiments).
	WorkSettings map[string]string
	// Keep leaves the databases in place for inspection.
	Keep bool
	// NoProjector runs Execledger's executor without the projection
	// engine (serve runs both), to measure the executor's share alone.
	NoProjector bool
	// NoSealer runs it without the Merkle log's sealer (serve runs it), to
	// measure what sealing and signing cost.
	NoSealer bool
	// Interval is how often a progress line is printed.
	Interval time.Duration
	// Stall ends a run that made no progress for this long.
	Stall time.Duration
	// Progress receives the progress lines; nil discards them.
	Progress io.Writer
	// Logger receives the systems' own warnings and errors.
	Logger *slog.Logger
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeBurndown
	}
	if c.System == "" {
		c.System = DefaultSystem
	}
	c.N = cmp.Or(c.N, 20000)
	c.Submitters = cmp.Or(c.Submitters, 8)
	c.Workers = cmp.Or(c.Workers, 64)
	c.ClaimBatch = cmp.Or(c.ClaimBatch, c.Workers)
	c.Duration = cmp.Or(c.Duration, 30*time.Second)
	c.RiverFetchCooldown = cmp.Or(c.RiverFetchCooldown, DefaultRiverFetchCooldown)
	c.AuditChains = cmp.Or(c.AuditChains, DefaultAuditChains)
	c.Interval = cmp.Or(c.Interval, 2*time.Second)
	c.Stall = cmp.Or(c.Stall, time.Minute)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every unusable setting.
func (c Config) Validate() error {
	var errs []error
	if c.AdminURL == "" {
		errs = append(errs, errors.New("bench: no database server: set DATABASE_URL"))
	}
	if c.Mode != ModeBurndown && c.Mode != ModeContinuous {
		errs = append(errs, fmt.Errorf("bench: mode %q: want %s or %s", c.Mode, ModeBurndown, ModeContinuous))
	}
	systems, err := parseSystems(c.System)
	if err != nil {
		errs = append(errs, err)
	}
	if !RiverLinked && slices.ContainsFunc(systems, func(s string) bool { return s != SystemExecledger }) {
		errs = append(errs, errNoRiver)
	}
	if c.AuditChains < 1 || c.AuditChains > maxAuditChains {
		errs = append(errs, fmt.Errorf("bench: audit chains %d: want 1 to %d", c.AuditChains, maxAuditChains))
	}
	if c.N < 1 || c.Submitters < 1 || c.Workers < 1 || c.ClaimBatch < 1 || c.CompleteBatch < 0 {
		errs = append(errs, errors.New("bench: n, submitters, workers and batch sizes must be positive"))
	}
	if c.Rate < 0 || c.Rate > 1e6 || (c.Rate > 0 && c.Mode != ModeContinuous) {
		errs = append(errs, fmt.Errorf("bench: rate %g: a continuous run's offered requests/s, between 0 (as fast as possible) and 1e6", c.Rate))
	}
	if c.Workers > 10000 {
		errs = append(errs, errors.New("bench: workers must be at most 10000 (River's limit)"))
	}
	if c.Duration <= 0 || c.Interval <= 0 || c.Stall <= 0 || c.RiverFetchCooldown < time.Millisecond {
		errs = append(errs, errors.New("bench: durations must be positive, and the River fetch cooldown at least 1ms"))
	}
	return errors.Join(errs...)
}

// systems lists the systems a run measures, baselines first.
func (c Config) systems() []string {
	s, _ := parseSystems(c.System)
	return s
}

// parseSystems reads Config.System: a name of SystemNames or a
// comma-separated list of them, each system once, in systemOrder.
func parseSystems(spec string) ([]string, error) {
	want := map[string]bool{}
	for name := range strings.SplitSeq(spec, ",") {
		switch name = strings.TrimSpace(name); name {
		case SystemExecledger, SystemRiver, SystemRiverAudited:
			want[name] = true
		case SystemBoth:
			want[SystemRiver], want[SystemExecledger] = true, true
		case SystemAll:
			for _, s := range systemOrder {
				want[s] = true
			}
		default:
			return nil, fmt.Errorf("bench: system %q: want %s, or a comma-separated list of %s, %s and %s",
				name, strings.Join(SystemNames, ", "), SystemExecledger, SystemRiver, SystemRiverAudited)
		}
	}
	var systems []string
	for _, s := range systemOrder {
		if want[s] {
			systems = append(systems, s)
		}
	}
	return systems, nil
}
