package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"sync"
	"testing"
)

// benchBundle returns a full bundle of about 100,000 events: 3,000
// requests with their attestations (one in eight denied by policy), five
// channel messages of 400 to 800 bytes after each request event, a
// checkpoint every 10,000 events. It is built once.
func benchBundle(b *testing.B) (*testLog, []byte) {
	bench.once.Do(func() {
		l := newTestLog(b, 7)
		reqs := make([]*testRequest, 3000)
		for i := range reqs {
			reqs[i] = l.newRequest()
			reqs[i].deny = i%8 == 0
		}
		l.record(reqs, 5, 10000)
		bench.log, bench.bundle = l, l.full()
	})
	return bench.log, bench.bundle
}

var bench struct {
	once   sync.Once
	log    *testLog
	bundle []byte
}

func BenchmarkVerify(b *testing.B) {
	l, bundle := benchBundle(b)
	b.SetBytes(int64(len(bundle)))
	b.ReportAllocs()
	var events int64
	for b.Loop() {
		rep, err := Verify(context.Background(), bytes.NewReader(bundle), l.keys(), nil)
		if err != nil || !rep.OK {
			b.Fatalf("%v %s", err, rep.Fault)
		}
		events += rep.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSHA256Baseline hashes the same events' encodings once each with
// bare SHA-256: the floor under verifying them.
func BenchmarkSHA256Baseline(b *testing.B) {
	l, _ := benchBundle(b)
	encs := make([][]byte, len(l.events))
	size := 0
	for i := range l.events {
		encs[i] = l.events[i].encoding(nil)
		size += len(encs[i])
	}
	b.SetBytes(int64(size))
	var events int64
	for b.Loop() {
		for _, enc := range encs {
			sha256.Sum256(enc)
		}
		events += int64(len(encs))
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
