package export_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// Size of the benchmarks' log: requests run by the executor, and other
// events (channel messages of 400 bytes) between them.
const (
	benchRequests = 2000
	benchFiller   = 90000
)

// benchLog builds a log of about 100,000 leaves for a benchmark: the
// requests run through the executor, the filler appended in batches as
// the superuser, all sealed under a published checkpoint.
func benchLog(b *testing.B) (*testLog, []uuid.UUID) {
	b.Helper()
	l := newTestLog(b)
	l.startSealer(b)
	stopExec := l.startExecutor(b)
	ctx := context.Background()
	ids := make([]uuid.UUID, benchRequests)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < benchRequests; i += 8 {
				ids[i] = l.submit(b, l.alice, "echo", map[string]any{"text": fmt.Sprint("bench ", i)})
			}
		})
	}
	store := ledger.NewStore(l.db.Pool)
	msg := bytes.Repeat([]byte("x"), 400)
	for i := 0; i < benchFiller; i += 1000 {
		evs := make([]ledger.NewEvent, 1000)
		for j := range evs {
			evs[j] = ledger.NewEvent{Type: "channel.message", Payload: map[string]any{"text": string(msg), "n": i + j}}
		}
		if _, err := store.AppendBatch(ctx, l.db.Pool, []ledger.StreamAppend{{Stream: fmt.Sprintf("channel:bench-%d", i), Expected: ledger.NoStream, Events: evs}}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	for _, id := range ids {
		l.awaitCovered(b, l.alice, id)
	}
	stopExec()
	return l, ids
}

// BenchmarkExport writes a full bundle of the log.
func BenchmarkExport(b *testing.B) {
	l, _ := benchLog(b)
	ctx := context.Background()
	var events, size int64
	for b.Loop() {
		cw := &counter{}
		sum, err := export.Export(ctx, l.auditor.Pool, export.Options{Scope: bundle.Scope{Full: true}}, bundle.NewWriter(cw))
		if err != nil {
			b.Fatal(err)
		}
		events, size = events+sum.Events, size+cw.n
	}
	b.SetBytes(size / int64(b.N))
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkVerifyDB verifies the log from its first leaf and the read
// model.
func BenchmarkVerifyDB(b *testing.B) {
	l, _ := benchLog(b)
	ctx := context.Background()
	var events int64
	for b.Loop() {
		rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{})
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Fault)
		}
		events += rep.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*counter)(nil)
