package projector_test

import (
	"context"
	"flag"

	"testing"
	"time"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

var benchRequests = flag.Int("bench-requests", 30000, "requests in the log BenchmarkRebuild rebuilds (about 6 events each)")

// seedLog appends n requests' worth of events as the executor writes them
// (tool.requested, request.claimed, policy.decided, budget.consumed for
// those in a run, execution.started, execution.finished,
// attestation.signed; one in ten denied by policy), over 50 principals and
// 500 runs with budgets. It writes ledger.events directly, in batches of
// 5,000 requests, one transaction each; the inline read models are then
// rebuilt to match.
func seedLog(b *testing.B, db *testdb.DB, n int) int64 {
	b.Helper()
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
INSERT INTO ledger.events (stream, version, type, payload, metadata)
SELECT 'run:p' || (r % 50) || '/run-' || r, 1, 'run.budget_set',
       json_build_object('principal', 'p' || (r % 50), 'run_id', 'run-' || r, 'max_calls', 1000),
       json_build_object('actor', 'p' || (r % 50))
FROM generate_series(0, 499) r`); err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 5000 {
		hi := min(lo+5000, n)
		_, err := db.Pool.Exec(ctx, `
WITH req AS (
    SELECT i, gen_random_uuid() AS id, 'p' || (i % 50) AS principal,
           CASE WHEN i % 3 = 0 THEN NULL ELSE 'run-' || ((i % 500) - (i % 500) % 50 + i % 50) END AS run_id,
           i % 10 = 0 AS denied
    FROM generate_series($1::int, $2::int - 1) i
)
INSERT INTO ledger.events (stream, version, type, payload, metadata)
SELECT 'request:' || r.id, e.v, e.type, e.payload, json_build_object('actor', 'bench', 'correlation_id', r.id)
FROM req r
CROSS JOIN LATERAL (
    SELECT * FROM (VALUES
        (1, 'tool.requested', json_build_object('request_id', r.id, 'principal', r.principal, 'tool', 'echo', 'run_id', r.run_id,
                                                'input', json_build_object('text', 'hello ' || r.i), 'input_digest', 'sha256:' || md5(r.i::text),
                                                'context', '{}'::json, 'context_bound', '[]'::json)),
        (2, 'request.claimed', json_build_object('request_id', r.id, 'executor', 'bench', 'attempt', 1)),
        (3, 'policy.decided', json_build_object('request_id', r.id, 'decision', CASE WHEN r.denied THEN 'deny' ELSE 'allow' END,
                                                'stage', CASE WHEN r.denied THEN 'policy' ELSE 'allow' END,
                                                'reason_code', CASE WHEN r.denied THEN 'policy.deny' ELSE 'policy.permit' END,
                                                'determining_policies', json_build_array('p1'), 'policy_digest', 'sha256:aa',
                                                'error_kind', CASE WHEN r.denied THEN 'policy_denied' END,
                                                'message', CASE WHEN r.denied THEN 'forbidden' END))
    ) AS x(v, type, payload)
    UNION ALL
    SELECT * FROM (VALUES
        (4, 'budget.consumed', json_build_object('request_id', r.id, 'run_id', r.run_id, 'principal', r.principal)))
        AS x(v, type, payload) WHERE NOT r.denied AND r.run_id IS NOT NULL
    UNION ALL
    SELECT * FROM (VALUES
        (5, 'execution.started', json_build_object('request_id', r.id, 'attempt', 1, 'executor', 'builtin', 'tier', 'builtin')),
        (6, 'execution.finished', json_build_object('request_id', r.id, 'attempt', 1, 'state', 'succeeded', 'tier', 'builtin',
                                                    'executor', 'builtin', 'output', json_build_object('text', 'hello ' || r.i),
                                                    'resources', json_build_object('wall_ms', r.i % 7, 'cpu_user_ms', 1))))
        AS x(v, type, payload) WHERE NOT r.denied
    UNION ALL
    SELECT 7, 'attestation.signed', json_build_object('request_id', r.id, 'attestation_digest', 'sha256:' || md5(r.id::text))
) e
ORDER BY r.i, e.v`, lo, hi)
		if err != nil {
			b.Fatal(err)
		}
	}
	// Versions were written sparse (4 and 5 skipped where absent); the
	// read models do not depend on versions being dense.
	var events int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events`).Scan(&events); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE ledger.events`); err != nil {
		b.Fatal(err)
	}
	return events
}

// BenchmarkRebuild measures `projector rebuild` of every read model with
// events (requests, runs, audit_trail, quota_usage) against a bare read of
// the same log in the same round: every event's columns fetched by a
// client in delivery order, 20,000 at a time, as the engine's batches
// read them. It reports events/s of each and vs_bare, the rebuild's rate
// over the bare read's, where the rebuild's rate is the log's events over
// the time to rebuild all four. Run with -benchtime 1x -count N.
func BenchmarkRebuild(b *testing.B) {
	db := testdb.New(b)
	events := seedLog(b, db, *benchRequests)
	ctx := context.Background()
	for _, name := range []string{"requests", "runs"} {
		if err := projector.Rebuild(ctx, db.Pool, name, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
	names := []string{"requests", "runs", "audit_trail", "quota_usage"}
	b.ResetTimer()
	var bareTotal, rebuildTotal time.Duration
	each := map[string]time.Duration{}
	for range b.N {
		start := time.Now()
		read := bareRead(b, db)
		bareTotal += time.Since(start)
		if read < events { // each rebuild adds two projection.* events
			b.Fatalf("bare read %d of %d events", read, events)
		}
		events = read
		start = time.Now()
		for _, name := range names {
			one := time.Now()
			if err := projector.Rebuild(ctx, db.Pool, name, 0, nil); err != nil {
				b.Fatal(err)
			}
			each[name] += time.Since(one)
		}
		rebuildTotal += time.Since(start)
	}
	bare := float64(events) * float64(b.N) / bareTotal.Seconds()
	rebuild := float64(events) * float64(b.N) / rebuildTotal.Seconds()
	b.ReportMetric(bare, "bare_events/s")
	b.ReportMetric(rebuild, "rebuild_events/s")
	b.ReportMetric(rebuild/bare, "vs_bare")
	b.ReportMetric(float64(events), "events")
	for name, d := range each {
		b.ReportMetric(float64(events)*float64(b.N)/d.Seconds(), name+"_events/s")
	}
}

func bareRead(b *testing.B, db *testdb.DB) int64 {
	b.Helper()
	ctx := context.Background()
	store := ledger.NewStore(db.Pool)
	var n int64
	var after ledger.Cursor
	for {
		evs, err := store.ReadAll(ctx, after, 20000)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) == 0 {
			return n
		}
		n += int64(len(evs))
		after = evs[len(evs)-1].Cursor()
	}
}
