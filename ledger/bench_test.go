package ledger

// Benchmarks of the ledger core. They are benchmarks, never timed tests:
// machines are shared and noisy, so a figure means something only as a
// ratio against a baseline measured in the same run. docs/benchmarks.md has
// the method, the command and the figures.
//
// BenchmarkSubmitVsCeiling runs the baseline and ledger.submit as
// sub-benchmarks of one benchmark, on the same eight connections to the same
// database, so that -count N interleaves them:
//
//	plain_insert   single-row INSERT into an unindexed table: the commit ceiling
//	submit         single-row ledger.submit, no executor waiting (no NOTIFY)
//	submit_notify  the same while an executor is registered in
//	               ledger.queue_waiters and LISTENs, so every submit NOTIFYs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/testdb"
)

// benchConns is how many connections, each driven by one goroutine, the
// concurrent benchmarks use.
const benchConns = 8

// benchWorkers opens n connections to db, each its own pgx.Conn with pgx's
// default exec mode (extended protocol, prepared-statement cache), and closes
// them when b ends.
func benchWorkers(b *testing.B, db *testdb.DB, n int) []*pgx.Conn {
	b.Helper()
	ctx := context.Background()
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		c, err := pgx.Connect(ctx, db.URL)
		if err != nil {
			b.Fatalf("connect worker %d: %v", i, err)
		}
		conns[i] = c
		b.Cleanup(func() { c.Close(context.Background()) })
	}
	return conns
}

// benchShare splits n operations over workers: worker w runs benchShare(n, workers, w).
func benchShare(n, workers, w int) int {
	s := n / workers
	if w < n%workers {
		s++
	}
	return s
}

// benchStatement is the one harness both sides of the ceiling comparison go
// through: every connection runs sql with args as its own autocommit
// statement, b.N times in all, one goroutine per connection. Only the
// statement differs between the baseline and the measured call. It reports
// the aggregate rate as ops/s; ns/op is wall time per statement across all
// connections.
func benchStatement(b *testing.B, conns []*pgx.Conn, sql string, args ...any) {
	b.Helper()
	ctx := context.Background()
	// Warm up: prepare and cache the statement on every connection.
	for i, c := range conns {
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("warm-up on connection %d: %v", i, err)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w, c := range conns {
		n := benchShare(b.N, len(conns), w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range n {
				if _, err := c.Exec(ctx, sql, args...); err != nil {
					b.Errorf("connection %d: %v", w, err)
					return
				}
			}
		}()
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkSubmitVsCeiling(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	if err := db.MapPrincipal(ctx, "postgres", "bench"); err != nil {
		b.Fatal(err)
	}
	// The ceiling's table: no primary key, no index, nothing to check.
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE bench_plain (v text)"); err != nil {
		b.Fatal(err)
	}
	conns := benchWorkers(b, db, benchConns)

	const input = `{"text":"hello"}`
	submit := func(b *testing.B) {
		benchStatement(b, conns, querySubmit, "echo", input, nil, nil, "{}")
	}

	b.Run("plain_insert", func(b *testing.B) {
		benchStatement(b, conns, "INSERT INTO bench_plain(v) VALUES ($1)", input)
	})
	b.Run("submit", func(b *testing.B) {
		benchAssertNoWaiters(b, db)
		submit(b)
	})
	b.Run("submit_notify", func(b *testing.B) {
		stop := benchWaitingExecutor(b, db)
		defer stop()
		submit(b)
	})
}

func benchAssertNoWaiters(b *testing.B, db *testdb.DB) {
	b.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.queue_waiters").Scan(&n); err != nil {
		b.Fatal(err)
	}
	if n != 0 {
		b.Fatalf("%d executors are registered as waiting; submit would NOTIFY", n)
	}
}

// benchWaitingExecutor plays an idle executor: it LISTENs on
// ledger_request_pending, registers in ledger.queue_waiters, so that every
// submit NOTIFYs, and drains the notifications as they come. stop
// unregisters it and waits for it to end.
func benchWaitingExecutor(b *testing.B, db *testdb.DB) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN ledger_request_pending"); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO ledger.queue_waiters (executor) VALUES ('bench')"); err != nil {
		b.Fatal(err)
	}
	var received atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				return
			}
			received.Add(1)
		}
	}()
	return func() {
		cancel()
		<-done
		// WaitForNotification's cancellation closes the connection; use the pool.
		if _, err := db.Pool.Exec(context.Background(), "DELETE FROM ledger.queue_waiters WHERE executor = 'bench'"); err != nil {
			b.Error(err)
		}
		conn.Close(context.Background())
		if received.Load() == 0 && b.N > 0 {
			b.Error("the waiting executor received no notification: submit did not NOTIFY")
		}
	}
}

// BenchmarkAppendBatch measures Store.AppendBatch throughput: each call
// appends one batch of events, each event starting a stream of its own
// (NoStream), the way submit starts a request:<id> stream. One op is one
// call; events/s is the aggregate rate over all connections.
func BenchmarkAppendBatch(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = benchConns
	cfg.MinConns = benchConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	store := NewStore(pool)
	var seq atomic.Int64 // keeps stream names unique across the runs of one database

	for _, size := range []int{100, 1000} {
		for _, workers := range []int{1, benchConns} {
			b.Run(fmt.Sprintf("events=%d/conns=%d", size, workers), func(b *testing.B) {
				conns := make([]*pgxpool.Conn, workers)
				for i := range conns {
					c, err := pool.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					defer c.Release()
					conns[i] = c
				}
				start := make(chan struct{})
				var wg sync.WaitGroup
				for w, c := range conns {
					n := benchShare(b.N, workers, w)
					wg.Add(1)
					go func() {
						defer wg.Done()
						batch := make([]StreamAppend, size)
						<-start
						for range n {
							base := seq.Add(int64(size)) - int64(size)
							for i := range batch {
								id := strconv.FormatInt(base+int64(i), 10)
								batch[i] = StreamAppend{
									Stream:   "bench:" + id,
									Expected: NoStream,
									Events: []NewEvent{{
										Type:     "bench.appended",
										Payload:  json.RawMessage(`{"n":` + id + `,"text":"hello"}`),
										Metadata: Metadata{Actor: "bench", CorrelationID: id},
									}},
								}
							}
							if _, err := store.AppendBatch(ctx, c, batch); err != nil {
								b.Errorf("connection %d: %v", w, err)
								return
							}
						}
					}()
				}
				b.ResetTimer()
				close(start)
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
