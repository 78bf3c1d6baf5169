package projector_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// BenchmarkSeal measures the sealer catching up with a log of
// -bench-requests requests (seedLog's, about 6.5 events each): the
// projection engine running projector.Sealer with serve's defaults
// (batches of 1,000 events, a checkpoint every 1,000 events) from the
// first event to the last, against a bare read of the same log in the
// same round. It reports sealed events/s, the bare read's, and vs_bare.
// Each round seals a fresh database: run with -benchtime 1x -count N.
func BenchmarkSeal(b *testing.B) {
	ctx := context.Background()
	skey, _, err := note.GenerateKey(rand.Reader, "bench.execledger/log")
	if err != nil {
		b.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		b.Fatal(err)
	}
	var sealTotal, bareTotal time.Duration
	var sealed int64
	for range b.N {
		b.StopTimer()
		db := testdb.New(b)
		events := seedLog(b, db, *benchRequests)
		b.StartTimer()
		start := time.Now()
		if read := bareRead(b, db); read < events {
			b.Fatalf("bare read %d of %d events", read, events)
		}
		bareTotal += time.Since(start)

		start = time.Now()
		p := projector.Sealer(ledger.NewSealer(ledger.SealerConfig{Signer: signer}))
		p.BatchSize = 1000
		e, err := projector.New(db.Pool, projector.Config{PollInterval: 10 * time.Millisecond}, p)
		if err != nil {
			b.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = e.Run(runCtx); close(done) }()
		for {
			size, err := ledger.LogSize(ctx, db.Pool)
			if err != nil {
				b.Fatal(err)
			}
			if int64(size) >= events {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		sealTotal += time.Since(start)
		sealed += events
		cancel()
		<-done
	}
	b.ReportMetric(float64(sealed)/sealTotal.Seconds(), "sealed_events/s")
	b.ReportMetric(float64(sealed)/bareTotal.Seconds(), "bare_events/s")
	b.ReportMetric(bareTotal.Seconds()/sealTotal.Seconds(), "vs_bare")
}
