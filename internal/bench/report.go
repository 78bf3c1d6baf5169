package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/jackc/pgx/v5"
)

// Report is the outcome of a benchmark: one Summary per system, and the
// ratio that is comparable between runs.
type Report struct {
	Mode    string     `json:"mode"`
	Machine Machine    `json:"machine"`
	Runs    []*Summary `json:"runs"`
	// Ratio is Execledger's throughput divided by River's, when both ran.
	Ratio float64 `json:"ratio_execledger_over_river,omitempty"`
	// RatioAudited is Execledger's throughput divided by river-audited's,
	// when both ran.
	RatioAudited float64 `json:"ratio_execledger_over_river_audited,omitempty"`
	// RatioAuditedRiver is river-audited's throughput divided by River's
	// (what the audit trail costs River), when both ran.
	RatioAuditedRiver float64 `json:"ratio_river_audited_over_river,omitempty"`
}

// Machine is what the figures were measured on.
type Machine struct {
	CPUs              int    `json:"cpus"`
	GOMAXPROCS        int    `json:"gomaxprocs"`
	GoVersion         string `json:"go_version"`
	PostgreSQL        string `json:"postgresql"`
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
	SharedBuffers     string `json:"shared_buffers"`
}

func machineFacts(ctx context.Context, adminURL string) (Machine, error) {
	m := Machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return m, fmt.Errorf("bench: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = conn.QueryRow(ctx, queryServerFacts).Scan(&m.PostgreSQL, &m.Fsync, &m.SynchronousCommit, &m.SharedBuffers)
	if err != nil {
		return m, fmt.Errorf("bench: read server settings: %w", err)
	}
	return m, nil
}

func (m Machine) String() string {
	return fmt.Sprintf("%d CPUs (GOMAXPROCS %d), %s, PostgreSQL %s, fsync %s, synchronous_commit %s, shared_buffers %s",
		m.CPUs, m.GOMAXPROCS, m.GoVersion, m.PostgreSQL, m.Fsync, m.SynchronousCommit, m.SharedBuffers)
}

// setRatio computes the ratios of the systems that ran.
func (r *Report) setRatio() {
	perSecond := map[string]float64{}
	for _, s := range r.Runs {
		perSecond[s.System] = s.PerSecond
	}
	ratio := func(of, over string) float64 {
		if perSecond[over] <= 0 {
			return 0
		}
		return perSecond[of] / perSecond[over]
	}
	r.Ratio = ratio(SystemExecledger, SystemRiver)
	r.RatioAudited = ratio(SystemExecledger, SystemRiverAudited)
	r.RatioAuditedRiver = ratio(SystemRiverAudited, SystemRiver)
}

// Check reports every run whose figures cannot be trusted.
func (r *Report) Check() error {
	var errs []error
	for _, s := range r.Runs {
		errs = append(errs, s.Check())
	}
	return errors.Join(errs...)
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\nmachine: %s\n", r.Machine)
	for _, s := range r.Runs {
		s.print(w)
	}
	for _, x := range []struct {
		name  string
		ratio float64
	}{
		{"execledger/river", r.Ratio},
		{"execledger/river-audited", r.RatioAudited},
		{"river-audited/river", r.RatioAuditedRiver},
	} {
		if x.ratio > 0 {
			fmt.Fprintf(w, "ratio %s (%s requests/s): %.3f\n", x.name, r.Mode, x.ratio)
		}
	}
}
