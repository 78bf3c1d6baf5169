package bench

import "time"

// CPU is the CPU time a run used per request, in microseconds: this
// process's (the submitters, and the executor with its projection engine
// and sealer, or River's client and workers) and the PostgreSQL
// cluster's (every process of it, the postmaster's reaped children
// included). Only a cluster this run has to itself (Config.PostmasterPID:
// `execledger bench --private-cluster`) gives a PostgreSQL figure that is
// this run's alone.
type CPU struct {
	Process  float64 `json:"process_us"`
	Postgres float64 `json:"postgres_us,omitempty"`
	Total    float64 `json:"total_us"`
}

// cpuSample is the CPU time used so far by this process and, when
// postmaster is known, by its cluster.
type cpuSample struct {
	process, cluster time.Duration
	clusterOK        bool
}

// sampleCPU samples; on a system without /proc it measures nothing
// (ok false).
func sampleCPU(postmaster int) (s cpuSample, ok bool) {
	p, ok := processCPU()
	if !ok {
		return s, false
	}
	s.process = p
	if postmaster > 0 {
		s.cluster, s.clusterOK = clusterCPU(postmaster)
	}
	return s, true
}

// perRequest is the CPU used between a and b over n requests.
func perRequest(a, b cpuSample, n int64) *CPU {
	if n <= 0 {
		return nil
	}
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	c := &CPU{Process: us(b.process - a.process)}
	if a.clusterOK && b.clusterOK {
		c.Postgres = us(b.cluster - a.cluster)
	}
	c.Total = c.Process + c.Postgres
	return c
}
