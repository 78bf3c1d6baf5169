package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Summary is one system's result in one mode.
type Summary struct {
	System     string `json:"system"`
	Mode       string `json:"mode"`
	Database   string `json:"database,omitempty"` // set when kept
	Submitters int    `json:"submitters"`
	Workers    int    `json:"workers"`
	// Rate is the offered load of a continuous run in requests/s; 0 when
	// the submitters submitted as fast as they could.
	Rate float64 `json:"offered_rate,omitempty"`

	// Requests is how many requests were inserted in the run.
	Requests int64 `json:"requests"`
	// InsertSeconds is how long inserting took: burndown's preload; in
	// continuous mode the window the submitters ran.
	InsertSeconds float64 `json:"insert_seconds"`
	// Completed is the throughput's numerator: burndown all requests,
	// continuous those final by the end of the window.
	Completed int64 `json:"completed"`
	// Seconds is the throughput's denominator: burndown the drain time,
	// continuous the window.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"requests_per_second"`
	// DrainSeconds is how long the backlog left at the end of a continuous
	// window took to finish (not part of the throughput).
	DrainSeconds float64 `json:"drain_seconds,omitempty"`

	// Latency is submit→final in milliseconds over every finished request.
	Latency Latency `json:"latency_ms"`
	// States counts requests by final state; SuccessState is the one
	// every request must reach.
	States       map[string]int64 `json:"states"`
	SuccessState string           `json:"success_state"`
	// EventsPerRequest is the log's events on request streams per request
	// (0 for River, which has no log).
	EventsPerRequest float64 `json:"events_per_request,omitempty"`
	// ProjectionLag is how far behind the log the asynchronous read models
	// were, sampled every 100 ms over the run, in milliseconds (nil for
	// River, which has none).
	ProjectionLag *Latency `json:"projection_lag_ms,omitempty"`
	// SealerLag is how far behind the log the Merkle log's sealer was
	// (the age of the oldest committed event not yet sealed), sampled
	// like ProjectionLag.
	SealerLag *Latency `json:"sealer_lag_ms,omitempty"`
	// CaughtUpSeconds is how long Execledger's read models and sealer
	// took, after the last request was final, to apply and seal the rest
	// of the log; the run (and CPU) ends there.
	CaughtUpSeconds float64 `json:"caught_up_after_final_s,omitempty"`
	// CPU is the CPU time per request inserted, over the whole run
	// (inserting and working, and Execledger's read models and sealer
	// catching up); its PostgreSQL part only with a private cluster
	// (Config.PostmasterPID).
	CPU *CPU `json:"cpu_per_request,omitempty"`
	// Windows is a continuous run's latency per 10 s of submit time.
	Windows []LatencyWindow `json:"latency_windows_ms,omitempty"`
	// AuditRowsPerRequest is river-audited's audit rows per request
	// (inserted, started, completed: 3 when no job was retried).
	AuditRowsPerRequest float64 `json:"audit_rows_per_request,omitempty"`
	// Audit is the verification of river-audited's audit log after the run.
	Audit *AuditCheck `json:"audit,omitempty"`
}

// AuditCheck is what verifying river-audited's audit log found: its
// chains unbroken, every job's trail complete and every outcome's
// signature valid, or the problems.
type AuditCheck struct {
	Chains     int   `json:"chains"`
	Rows       int64 `json:"rows"`
	Jobs       int64 `json:"jobs"`
	Signatures int64 `json:"signatures_verified"`
	// PublicKey is the run's Ed25519 public key, hex.
	PublicKey string `json:"public_key"`
	// ProblemCount is how many problems were found; Problems spells out
	// the first few.
	ProblemCount int      `json:"problem_count"`
	Problems     []string `json:"problems,omitempty"`
}

// Err is nil when the audit log verified.
func (a *AuditCheck) Err() error {
	if a.ProblemCount == 0 {
		return nil
	}
	return fmt.Errorf("%d problems in the audit log, the first: %s", a.ProblemCount, strings.Join(a.Problems, "; "))
}

// Latency holds percentiles in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Unsucceeded is how many requests did not reach the success state.
func (s *Summary) Unsucceeded() int64 { return s.Requests - s.States[s.SuccessState] }

// Check reports a run whose figures cannot be trusted: a request that did
// not succeed, or one the database does not account for.
func (s *Summary) Check() error {
	var total int64
	for _, n := range s.States {
		total += n
	}
	switch {
	case total != s.Requests:
		return fmt.Errorf("bench: %s: %d requests inserted, %d in the database", s.System, s.Requests, total)
	case s.Unsucceeded() > 0:
		return fmt.Errorf("bench: %s: %d of %d requests did not end %s: %s", s.System, s.Unsucceeded(), s.Requests,
			s.SuccessState, s.statesText())
	case s.Audit != nil && s.Audit.Err() != nil:
		return fmt.Errorf("bench: %s: %w", s.System, s.Audit.Err())
	}
	return nil
}

func (s *Summary) statesText() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.States)) {
		fmt.Fprintf(&b, "%s %d  ", k, s.States[k])
	}
	return strings.TrimSpace(b.String())
}

// print writes the summary for people.
func (s *Summary) print(w io.Writer) {
	switch s.Mode {
	case ModeBurndown:
		fmt.Fprintf(w, "%s burndown: %d requests drained in %.2fs: %.0f requests/s (inserted in %.2fs, %.0f/s)\n",
			s.System, s.Requests, s.Seconds, s.PerSecond, s.InsertSeconds, rate(s.Requests, s.InsertSeconds))
	default:
		offered := ""
		if s.Rate > 0 {
			offered = fmt.Sprintf(", offered %.0f/s", s.Rate)
		}
		fmt.Fprintf(w, "%s continuous: %.1fs, %d submitters%s, %d workers: submitted %d (%.0f/s), completed %d in the window: %.0f requests/s; backlog drained in %.2fs\n",
			s.System, s.Seconds, s.Submitters, offered, s.Workers, s.Requests, rate(s.Requests, s.InsertSeconds), s.Completed,
			s.PerSecond, s.DrainSeconds)
	}
	l := s.Latency
	fmt.Fprintf(w, "  submit→final ms   p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%d requests)\n", l.P50, l.P90, l.P99, l.Max, l.Count)
	fmt.Fprintf(w, "  states            %s\n", s.statesText())
	if s.EventsPerRequest > 0 {
		fmt.Fprintf(w, "  events/request    %.2f\n", s.EventsPerRequest)
	}
	if len(s.Windows) > 0 {
		var p50, p99 []string
		for _, win := range s.Windows {
			p50, p99 = append(p50, fmt.Sprintf("%.1f", win.P50)), append(p99, fmt.Sprintf("%.1f", win.P99))
		}
		fmt.Fprintf(w, "  per %d s window   p50 %s\n                    p99 %s\n", windowSeconds, strings.Join(p50, " "), strings.Join(p99, " "))
	}
	if c := s.CPU; c != nil {
		pg := "PostgreSQL not measured (a shared server: --private-cluster)"
		if c.Postgres > 0 {
			pg = fmt.Sprintf("PostgreSQL %.0f", c.Postgres)
		}
		fmt.Fprintf(w, "  CPU µs/request    total %.0f: this process %.0f, %s\n", c.Total, c.Process, pg)
	}
	if l := s.ProjectionLag; l != nil {
		fmt.Fprintf(w, "  read model lag ms p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%d samples)\n", l.P50, l.P90, l.P99, l.Max, l.Count)
	}
	if l := s.SealerLag; l != nil {
		fmt.Fprintf(w, "  sealer lag ms     p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%d samples)\n", l.P50, l.P90, l.P99, l.Max, l.Count)
	}
	if s.ProjectionLag != nil || s.SealerLag != nil {
		fmt.Fprintf(w, "  caught up         %.2f s after the last request was final (read models and sealer; counted in CPU)\n", s.CaughtUpSeconds)
	}
	if s.AuditRowsPerRequest > 0 {
		fmt.Fprintf(w, "  audit rows/request %.2f\n", s.AuditRowsPerRequest)
	}
	if a := s.Audit; a != nil {
		verdict := "verified"
		if a.ProblemCount > 0 {
			verdict = fmt.Sprintf("%d PROBLEMS: %s", a.ProblemCount, strings.Join(a.Problems, "; "))
		}
		fmt.Fprintf(w, "  audit log         %d rows in %d chains, %d jobs, %d signatures: %s\n", a.Rows, a.Chains, a.Jobs, a.Signatures, verdict)
	}
	if s.Database != "" {
		fmt.Fprintf(w, "  database          %s (kept)\n", s.Database)
	}
}

func rate(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

func readStates(ctx context.Context, pool *pgxpool.Pool, query, success string, s *Summary) error {
	rows, err := pool.Query(ctx, query)
	if err != nil {
		return fmt.Errorf("bench: read states: %w", err)
	}
	defer rows.Close()
	s.States, s.SuccessState = map[string]int64{}, success
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return fmt.Errorf("bench: read states: %w", err)
		}
		s.States[state] = n
	}
	return rows.Err()
}

func readLatency(ctx context.Context, pool *pgxpool.Pool, query string, s *Summary) error {
	l := &s.Latency
	if err := pool.QueryRow(ctx, query).Scan(&l.Count, &l.P50, &l.P90, &l.P99, &l.Max); err != nil {
		return fmt.Errorf("bench: read latency: %w", err)
	}
	return nil
}

// LatencyWindow is submit→final latency of the requests submitted in one
// window of a continuous run.
type LatencyWindow struct {
	StartSeconds float64 `json:"start_s"` // from the first submit
	Count        int64   `json:"count"`
	P50          float64 `json:"p50"`
	P99          float64 `json:"p99"`
}

// windowSeconds is the width of Summary.Windows.
const windowSeconds = 10

// readWindows reads a continuous run's latency per window of submit time
// from table's submit and final columns.
func readWindows(ctx context.Context, pool *pgxpool.Pool, table, submitted, final string, s *Summary) error {
	if s.Mode != ModeContinuous {
		return nil
	}
	rows, err := pool.Query(ctx, fmt.Sprintf(queryLatencyWindows, submitted, final, table, final), windowSeconds)
	if err != nil {
		return fmt.Errorf("bench: read latency windows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var w int
		var lw LatencyWindow
		if err := rows.Scan(&w, &lw.Count, &lw.P50, &lw.P99); err != nil {
			return fmt.Errorf("bench: read latency windows: %w", err)
		}
		lw.StartSeconds = float64(w * windowSeconds)
		s.Windows = append(s.Windows, lw)
	}
	return rows.Err()
}
