package executor

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the executor's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	finished      *prometheus.CounterVec
	decisions     *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	inflight      prometheus.Gauge
	claimBatch    prometheus.Histogram
	completeBatch prometheus.Histogram
	rescues       *prometheus.CounterVec
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
	}
	reg.MustRegister(m.finished, m.decisions, m.latency, m.inflight, m.claimBatch, m.completeBatch, m.rescues)
	for _, action := range []string{"requeued", "outcome_unknown", "cancelled"} {
		m.rescues.WithLabelValues(action) // exported as 0 before the first rescue
	}
	return m
}

func (m *Metrics) toolLabel(e *Executor, tool string) string {
	if _, ok := e.tools[tool]; ok {
		return tool
	}
	if _, ok := e.skillTools.Load(tool); ok {
		return tool // an installed skill's: as bounded as what skill admins install
	}
	return "unknown" // bounded cardinality: requests may name any tool
}

func (m *Metrics) finish(e *Executor, tool, state, kind string, submitted time.Time) {
	if m == nil {
		return
	}
	t := m.toolLabel(e, tool)
	m.finished.WithLabelValues(t, state, kind).Inc()
	if !submitted.IsZero() {
		m.latency.WithLabelValues(t).Observe(time.Since(submitted).Seconds())
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
