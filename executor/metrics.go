package executor

import (
	"encoding/json"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/execledger/execledger/ledger"
)

// Metrics are the executor's Prometheus metrics. A nil *Metrics records
// nothing. Every label has a bounded set of values: tools go through
// toolLabel, tiers are the four of Tool.Tier, outcomes and kill reasons
// fixed sets. Which executor reported a series is not a label of these
// metrics: serve adds executor="<serve.label>" to everything it exports
// (prometheus.WrapRegistererWith).
type Metrics struct {
	finished      *prometheus.CounterVec
	decisions     *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	inflight      prometheus.Gauge
	claimBatch    prometheus.Histogram
	completeBatch prometheus.Histogram
	rescues       *prometheus.CounterVec
	tierRun       *prometheus.HistogramVec
	kills         *prometheus.CounterVec
	fuel          *prometheus.HistogramVec
	egress        *prometheus.CounterVec
}

// NewMetrics creates the executor's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execledger_requests_finished_total", Help: "Requests that reached a final state, by tool, state and error kind.",
		}, []string{"tool", "state", "error_kind"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execledger_decisions_total", Help: "Authorization decisions, by decision and reason code.",
		}, []string{"decision", "reason_code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "execledger_request_duration_seconds", Help: "From submit to final state, by tool.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"tool"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "execledger_executor_inflight", Help: "Requests this executor has claimed and not completed.",
		}),
		claimBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "execledger_claim_batch_size", Help: "Requests per claim transaction.", Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		completeBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "execledger_complete_batch_size", Help: "Requests per completion transaction.", Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		rescues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execledger_lease_rescues_total", Help: "Expired leases settled, by action (requeued, outcome_unknown, cancelled).",
		}, []string{"action"}),
		tierRun: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "execledger_tier_run_duration_seconds", Help: "Time of the tool's run in its tier (not submit to final), by tier, tool and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"tier", "tool", "outcome"}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execledger_sandbox_kills_total", Help: "Calls the sandbox stopped before they finished, by tier and reason (timeout, cancelled, memory, cpu, fuel, output_limit, file_size, processes, other).",
		}, []string{"tier", "reason"}),
		fuel: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "execledger_wasm_fuel_used", Help: "WebAssembly fuel a tier A call consumed, by tool.",
			Buckets: prometheus.ExponentialBuckets(1000, 10, 8),
		}, []string{"tool"}),
		egress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execledger_egress_connections_total", Help: "Outbound connection attempts of calls, by tier and whether the egress policy allowed them.",
		}, []string{"tier", "allowed"}),
	}
	reg.MustRegister(m.finished, m.decisions, m.latency, m.inflight, m.claimBatch, m.completeBatch, m.rescues,
		m.tierRun, m.kills, m.fuel, m.egress)
	for _, action := range []string{"requeued", "outcome_unknown", "cancelled"} {
		m.rescues.WithLabelValues(action) // exported as 0 before the first rescue
	}
	return m
}

// finish counts a request that ended in state; tool is its metric label
// (toolSet.label).
func (m *Metrics) finish(tool string, state ledger.State, kind ledger.ErrorKind, submitted time.Time) {
	if m == nil {
		return
	}
	m.finished.WithLabelValues(tool, string(state), string(kind)).Inc()
	if !submitted.IsZero() {
		m.latency.WithLabelValues(tool).Observe(time.Since(submitted).Seconds())
	}
}

func (m *Metrics) decide(decision, reason string) {
	if m != nil {
		m.decisions.WithLabelValues(decision, reason).Inc()
	}
}

func (m *Metrics) claimed(n int) {
	if m != nil {
		m.claimBatch.Observe(float64(n))
	}
}

func (m *Metrics) completed(n int) {
	if m != nil {
		m.completeBatch.Observe(float64(n))
	}
}

func (m *Metrics) setInflight(n int) {
	if m != nil {
		m.inflight.Set(float64(n))
	}
}

func (m *Metrics) rescued(action string) {
	if m != nil {
		m.rescues.WithLabelValues(action).Inc()
	}
}

// ran records what a job's run in its tier did: how long it took, whether
// the sandbox stopped it and why, the fuel it used and its outbound
// connections. res is the result after execute's checks.
func (m *Metrics) ran(tool string, j *job, res Result) {
	if m == nil || j.impl == nil {
		return
	}
	tier := j.impl.Tier()
	m.tierRun.WithLabelValues(tier, tool, outcomeLabel(res.ErrorKind)).Observe(time.Since(j.started).Seconds())
	if reason := killReason(tier, res); reason != "" {
		m.kills.WithLabelValues(tier, reason).Inc()
	}
	if used, ok := res.Resources["fuel_used"]; ok {
		m.fuel.WithLabelValues(tool).Observe(float64(used))
	}
	if conns, ok := res.Resources["egress_connections"]; ok {
		refused := res.Resources["egress_refused"]
		m.egress.WithLabelValues(tier, "true").Add(float64(max(conns-refused, 0)))
		m.egress.WithLabelValues(tier, "false").Add(float64(refused))
	}
}

// outcomeLabel is "succeeded" or the error kind; a kind outside the
// contract's (which the ledger would refuse anyway) is "other".
func outcomeLabel(kind ledger.ErrorKind) string {
	switch {
	case kind == "":
		return "succeeded"
	case kind.Valid():
		return string(kind)
	}
	return "other"
}

// Kill reasons of execledger_sandbox_kills_total.
const (
	killTimeout     = "timeout"
	killCancelled   = "cancelled"
	killMemory      = "memory"
	killCPU         = "cpu"
	killFuel        = "fuel"
	killOutputLimit = "output_limit"
	killFileSize    = "file_size"
	killProcesses   = "processes"
	killOther       = "other"
)

// processLimits maps the limit a tier B or C run names in its output's
// limit_exceeded (processrun's limit.go) to a kill reason.
var processLimits = map[string]string{
	"output_limit_bytes": killOutputLimit,
	"rlimit_cpu_seconds": killCPU,
	"rlimit_file_size":   killFileSize,
	"cgroup memory.max":  killMemory,
	"cgroup pids.max":    killProcesses,
}

// killReason tells from a result why the sandbox stopped the call, or ""
// when nothing did (a success, a failure of the program's own, a refusal
// before anything ran):
//   - timed_out is a timeout and cancelled a cancellation, in any tier;
//   - quota_exceeded in tier B or C names the limit in the output's
//     limit_exceeded; without one the call was refused, not stopped (the
//     background process limits);
//   - quota_exceeded in tier A, for a module that ran (it reports
//     memory_pages_peak): output over output_limit_bytes, else fuel used
//     up to fuel_limit, else the memory limit, the only other limit a
//     running module meets.
func killReason(tier string, res Result) string {
	switch res.ErrorKind {
	case ledger.KindTimedOut:
		return killTimeout
	case ledger.KindCancelled:
		return killCancelled
	case ledger.KindQuotaExceeded:
	default:
		if res.TimedOut {
			return killTimeout
		}
		return ""
	}
	if tier != "A" {
		var out struct {
			LimitExceeded string `json:"limit_exceeded"`
		}
		if json.Unmarshal(res.Output, &out) != nil || out.LimitExceeded == "" {
			return ""
		}
		if reason, ok := processLimits[out.LimitExceeded]; ok {
			return reason
		}
		return killOther
	}
	r := res.Resources
	if _, ran := r["memory_pages_peak"]; !ran {
		return ""
	}
	if limit, ok := enforcedInt(res.Enforcement, "output_limit_bytes"); ok && r["output_bytes"] > limit {
		return killOutputLimit
	}
	if r["fuel_limit"] > 0 && r["fuel_used"] >= r["fuel_limit"] {
		return killFuel
	}
	return killMemory
}

// enforcedInt reads a number from a result's enforcement.
func enforcedInt(enf map[string]any, key string) (int64, bool) {
	switch v := enf[key].(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}
