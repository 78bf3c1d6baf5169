package projector_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// TestOneRunnerPerProjection runs the same projection in engines on
// separate pools (as separate serve processes would): one applies at a
// time; when its engine stops, or its lock connection is killed, another
// takes over; and every event is applied exactly once throughout.
func TestOneRunnerPerProjection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var inApply, maxInApply atomic.Int32
	exclusive := projector.Projection{Name: "toy", Apply: map[string]projector.ApplyFunc{
		"test.counted": func(ctx context.Context, tx pgx.Tx, ev ledger.Event) error {
			n := inApply.Add(1)
			defer inApply.Add(-1)
			for {
				m := maxInApply.Load()
				if n <= m || maxInApply.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond) // widen the window two runners would share
			return record("toy")(ctx, tx, ev)
		},
	}}
	pool := func(app string) *pgxpool.Pool {
		p, err := pgxpool.New(context.Background(), b.exec.URL+"&application_name="+app)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	var want []int64
	appendSome := func() int64 {
		want = append(want, b.appendEvents(t, "test:a", "test.counted", 15)...)
		return want[len(want)-1]
	}
	applied := func() bool { return equalPositions(b.appliedPositions(t, "toy"), want) }

	_, stopA := b.start(t, pool("engine_a"), fast, exclusive)
	waitFor(t, "engine a to take the lock", func() bool { return b.lockHolder(t, "toy") == "engine_a" })
	_, stopB := b.start(t, pool("engine_b"), fast, exclusive)
	appendSome()
	waitFor(t, "engine a to apply", applied)
	// Engine b stands by while a runs. On a loaded machine a's lock
	// session may break and b take over: that is failover, not a second
	// runner, which maxInApply below would catch.
	waitFor(t, "engine a (or b, had a's session broken) to hold the lock", func() bool {
		h := b.lockHolder(t, "toy")
		return h == "engine_a" || h == "engine_b"
	})

	stopA()
	waitFor(t, "engine b to take over from a stopped engine", func() bool { return b.lockHolder(t, "toy") == "engine_b" })
	appendSome()
	waitFor(t, "engine b to apply", applied)

	_, _ = b.start(t, pool("engine_c"), fast, exclusive)
	var killed bool
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT pg_terminate_backend(l.pid) FROM pg_locks l
JOIN ledger.projections p ON l.objid::bigint = p.lock_key
WHERE l.locktype = 'advisory' AND l.classid = x'70726f6a'::int::oid AND l.objsubid = 2 AND l.granted AND p.name = 'toy'`).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the lock holder: %v %v", killed, err)
	}
	appendSome()
	waitFor(t, "a runner to take over from a killed connection", applied)
	// The killed runner reconnects and competes for the lock again, so a
	// moment may pass with no holder; one of the two live engines holds it.
	waitFor(t, "engine b or c to hold the lock", func() bool {
		h := b.lockHolder(t, "toy")
		return h == "engine_b" || h == "engine_c"
	})
	stopB()
	appendSome()
	waitFor(t, "the last engine to apply", applied)
	if m := maxInApply.Load(); m != 1 {
		t.Fatalf("%d apply functions ran at once", m)
	}
}

// lockHolder is the application_name of the session holding projection
// name's lock, "" when none.
func (b bundle) lockHolder(t *testing.T, name string) string {
	t.Helper()
	var app string
	err := b.db.Pool.QueryRow(context.Background(), `SELECT a.application_name FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
JOIN ledger.projections p ON l.objid::bigint = p.lock_key
WHERE l.locktype = 'advisory' AND l.classid = x'70726f6a'::int::oid AND l.objsubid = 2 AND l.granted AND p.name = $1`, name).Scan(&app)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	return app
}
