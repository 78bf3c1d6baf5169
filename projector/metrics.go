package projector

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/execledger/execledger/ledger"
)

// metrics are the engine's Prometheus metrics, labelled by projection (a
// bounded set: the projections compiled in). A nil *metrics records
// nothing.
type metrics struct {
	checkpoint    *prometheus.GaugeVec
	eventsBehind  *prometheus.GaugeVec
	secondsBehind *prometheus.GaugeVec
	appliedTotal  *prometheus.CounterVec
	failed        *prometheus.GaugeVec
	running       *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"projection"})
	}
	m := &metrics{
		checkpoint:    gauge("execledger_projection_checkpoint_position", "Position of the last event the projection has passed (its checkpoint)."),
		eventsBehind:  gauge("execledger_projection_events_behind", "Events deliverable after the projection's checkpoint (counted up to 1,000,000)."),
		secondsBehind: gauge("execledger_projection_seconds_behind", "Age of the first event after the projection's checkpoint; 0 when caught up."),
		failed:        gauge("execledger_projection_failed", "1 while the projection is stopped by a failure."),
		running:       gauge("execledger_projection_running", "1 while this process holds the projection's lock."),
		appliedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execledger_projection_applied_events_total", Help: "Events this process applied to the projection and committed.",
		}, []string{"projection"}),
	}
	reg.MustRegister(m.checkpoint, m.eventsBehind, m.secondsBehind, m.failed, m.running, m.appliedTotal)
	return m
}

func (m *metrics) applied(name string, n int64, to ledger.Cursor) {
	if m == nil {
		return
	}
	m.appliedTotal.WithLabelValues(name).Add(float64(n))
	m.checkpoint.WithLabelValues(name).Set(float64(to.Position))
}

func (m *metrics) setRunning(name string, running bool) {
	if m != nil {
		m.running.WithLabelValues(name).Set(boolFloat(running))
	}
}

func (m *metrics) set(s Status) {
	if m == nil {
		return
	}
	m.checkpoint.WithLabelValues(s.Name).Set(float64(s.Checkpoint.Position))
	m.eventsBehind.WithLabelValues(s.Name).Set(float64(s.EventsBehind))
	m.secondsBehind.WithLabelValues(s.Name).Set(s.SecondsBehind)
	m.failed.WithLabelValues(s.Name).Set(boolFloat(s.State == stateFailed))
	m.appliedTotal.WithLabelValues(s.Name) // exported as 0 before the first event
}

// observeInterval is the least time between two refreshes of a runner's
// gauges: the lag query counts events, and a scrape every few seconds
// needs no more.
const observeInterval = time.Second

// observe refreshes the projection's gauges from the database, at most
// once per observeInterval (or PollInterval, if longer): lag is read by every runner, standbys included,
// so that any process shows it. Errors are logged and the gauges kept.
func (r *runner) observe(ctx context.Context, conn *pgx.Conn) {
	if r.e.metrics == nil || time.Since(r.observed) < max(r.e.cfg.PollInterval, observeInterval) {
		return
	}
	r.observed = time.Now()
	st, err := status(ctx, conn, &r.proj.Name)
	if err != nil || len(st) != 1 {
		if ctx.Err() == nil {
			r.logger.Warn("projection metrics not refreshed", slog.Any("error", err))
		}
		return
	}
	r.e.metrics.set(st[0])
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
