package ledger

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// logMetrics are the Merkle log's gauges, after Tessera's: how far the
// log has sequenced, integrated, signed and had witnessed the events, and
// how far behind the newest event it is. A nil *logMetrics records nothing.
type logMetrics struct {
	sequenced, integrated, signed, witnessed prometheus.Gauge
	lag, checkpointTime, witnessedTime       prometheus.Gauge
	unsealed                                 prometheus.Gauge
	size                                     uint64 // integrated, for sequenced
}

func newLogMetrics(reg prometheus.Registerer) *logMetrics {
	if reg == nil {
		return nil
	}
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &logMetrics{
		sequenced:      g("execledger_log_sequenced_size", "Events committed and deliverable in commit order: the log's size once the sealer has caught up."),
		integrated:     g("execledger_log_integrated_size", "Leaves in the Merkle log (events sealed)."),
		signed:         g("execledger_log_signed_size", "Tree size of the newest signed checkpoint."),
		witnessed:      g("execledger_log_witnessed_size", "Tree size of the newest published checkpoint (cosigned by the witness quorum, or signed when no witness is required)."),
		lag:            g("execledger_log_lag_seconds", "Age of the oldest committed event not yet sealed; 0 when caught up."),
		checkpointTime: g("execledger_log_checkpoint_timestamp_seconds", "When the newest checkpoint was signed (Unix time)."),
		witnessedTime:  g("execledger_log_witnessed_checkpoint_timestamp_seconds", "When the newest published checkpoint was signed (Unix time): behind the newest checkpoint's while the witnesses have not cosigned it."),
		unsealed:       g("execledger_log_unsealed_events", "Events in ledger.events below the sealed horizon that are not leaves of the Merkle log (or claim a future transaction id), at the sealer's last audit: forgeries; 0 on a sound ledger."),
	}
	reg.MustRegister(m.sequenced, m.integrated, m.signed, m.witnessed, m.lag, m.checkpointTime, m.witnessedTime, m.unsealed)
	return m
}

func (m *logMetrics) setIntegrated(size uint64) {
	if m != nil {
		m.size = size
		m.integrated.Set(float64(size))
	}
}

func (m *logMetrics) setSigned(size uint64, at time.Time) {
	if m != nil {
		m.signed.Set(float64(size))
		m.checkpointTime.Set(float64(at.UnixNano()) / 1e9)
	}
}

func (m *logMetrics) setWitnessed(size uint64, signedAt time.Time) {
	if m != nil {
		m.witnessed.Set(float64(size))
		m.witnessedTime.Set(float64(signedAt.UnixNano()) / 1e9)
	}
}

// setBehind sets the sequenced size from the integrated one and the
// events waiting behind it, and the lag.
func (m *logMetrics) setBehind(behind int64, lag float64) {
	if m == nil {
		return
	}
	m.sequenced.Set(float64(m.size) + float64(behind))
	m.lag.Set(lag)
}

func (m *logMetrics) setUnsealed(n int64) {
	if m != nil {
		m.unsealed.Set(float64(n))
	}
}
