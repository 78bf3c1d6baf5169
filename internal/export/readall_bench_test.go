package export_test

import (
	"context"
	"testing"
)

// BenchmarkReadAllSealed reads a sealed log of about 100,000 leaves through
// ledger.read_all, as a projection catching up or a rebuild does: since
// migration 017 every event below the sealer's cursor costs a probe of
// the leaves (ledger.in_record), the worst case of that filter.
func BenchmarkReadAllSealed(b *testing.B) {
	l, _ := benchLog(b)
	ctx := context.Background()
	var events int64
	for b.Loop() {
		var n int64
		if err := l.auditor.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.read_all('0', 0, 10000000)`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		events += n
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
