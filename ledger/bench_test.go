package ledger

// Benchmarks of the ledger core. They are benchmarks, never timed tests:
// machines are shared and noisy, so a figure means something only as a
// ratio against a baseline measured in the same run. docs/benchmarks.md has
// the method, the commands and the figures.
//
// BenchmarkSubmitVsCeiling measures, on the same eight connections to the
// same database:
//
//	plain_insert   single-row INSERT into an unindexed table: the commit ceiling
//	submit         single-row ledger.submit, no executor waiting (no NOTIFY)
//	submit_notify  the same while an executor waits: it LISTENs and is
//	               registered in ledger.queue_waiters, and registers again
//	               as soon as a NOTIFY has woken it (the worst case: an
//	               executor that is idle again at once)
//	client_submit  Client.Submit over a pool of eight connections, from
//	               -client-callers goroutines (8 and 32) with
//	               -client-inflight calls in flight at most (the client's
//	               default, 8): the calls that queue are batched into
//	               submit_many
//
// go test's -count repeats each sub-benchmark back to back, which would put
// all the baselines minutes away from the calls they are compared with. So
// the benchmarks run in rounds instead (-rounds N, after the package list):
// each round measures the baseline and then the calls, and the calls report
// vs_plain, their rate divided by the baseline's rate of the same round.
// benchstat -ignore /round merges the rounds into samples.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/testdb"
)

var benchRounds = flag.Int("rounds", 1, "interleaved rounds of baseline and measured sub-benchmarks")

// The client_submit variants: the batcher's in-flight calls, and the
// goroutines calling Client.Submit.
var (
	benchClientInFlight = []int{benchConns}
	benchClientCallers  = []int{benchConns, 4 * benchConns}
)

func init() {
	flag.Func("client-inflight", "comma-separated in-flight limits for client_submit (default: the client's, the pool's 8 connections)", func(v string) error {
		return parseInts(v, &benchClientInFlight)
	})
	flag.Func("client-callers", "comma-separated goroutine counts for client_submit (default 8,32)", func(v string) error {
		return parseInts(v, &benchClientCallers)
	})
}

func parseInts(v string, into *[]int) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	*into = out
	return nil
}

// benchConns is how many connections, each driven by one goroutine, the
// concurrent benchmarks use.
const benchConns = 8

// benchPlainTable is the ceiling's table: no primary key, no index, no check.
const benchPlainTable = "CREATE TABLE bench_plain (v text)"

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

// benchParallel runs b.N calls of op spread over workers goroutines, worker
// w calling op(w) benchShare(b.N, workers, w) times, and returns the
// aggregate rate in calls per second. Only the calls are timed.
func benchParallel(b *testing.B, workers int, op func(w int) error) float64 {
	b.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		n := benchShare(b.N, workers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range n {
				if err := op(w); err != nil {
					b.Errorf("worker %d: %v", w, err)
					return
				}
			}
		}()
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	return float64(b.N) / b.Elapsed().Seconds()
}

// benchStatement is the one harness both sides of the ceiling comparison go
// through: every connection runs sql with args as its own autocommit
// statement, b.N times in all, one goroutine per connection. Only the
// statement differs between the baseline and the measured call. It reports
// and returns the aggregate rate as ops/s; ns/op is wall time per statement
// across all connections.
func benchStatement(b *testing.B, conns []*pgx.Conn, sql string, args ...any) float64 {
	b.Helper()
	ctx := context.Background()
	// Warm up: prepare and cache the statement on every connection.
	for i, c := range conns {
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("warm-up on connection %d: %v", i, err)
		}
	}
	rate := benchParallel(b, len(conns), func(w int) error {
		_, err := conns[w].Exec(ctx, sql, args...)
		return err
	})
	b.ReportMetric(rate, "ops/s")
	return rate
}

// benchVsPlain reports rate as a fraction of the same round's baseline.
func benchVsPlain(b *testing.B, rate, plain float64) {
	if plain > 0 {
		b.ReportMetric(rate/plain, "vs_plain")
	}
}

func BenchmarkSubmitVsCeiling(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	if err := db.MapPrincipal(ctx, "postgres", "bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, benchPlainTable); err != nil {
		b.Fatal(err)
	}
	conns := benchWorkers(b, db, benchConns)

	// Client.Submit from as many goroutines, batching into submit_many
	// over a pool of as many connections.
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = benchConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	client := NewClient(pool)
	b.Cleanup(client.Close)

	const input = `{"text":"hello"}`
	submit := func(b *testing.B) float64 {
		return benchStatement(b, conns, querySubmit, "echo", input, nil, nil, "{}")
	}

	for round := 1; round <= *benchRounds; round++ {
		b.Run(fmt.Sprintf("round=%d", round), func(b *testing.B) {
			var plain float64
			b.Run("plain_insert", func(b *testing.B) {
				plain = benchStatement(b, conns, "INSERT INTO bench_plain(v) VALUES ($1)", input)
			})
			b.Run("submit", func(b *testing.B) {
				benchAssertNoWaiters(b, db)
				benchVsPlain(b, submit(b), plain)
			})
			b.Run("submit_notify", func(b *testing.B) {
				stop := benchWaitingExecutor(b, db)
				defer stop()
				benchVsPlain(b, submit(b), plain)
			})
			for _, inFlight := range benchClientInFlight {
				for _, callers := range benchClientCallers {
					b.Run(fmt.Sprintf("client_submit/inflight=%d/callers=%d", inFlight, callers), func(b *testing.B) {
						benchAssertNoWaiters(b, db)
						client.submits.maxInFlight = inFlight
						rate := benchParallel(b, callers, func(int) error {
							_, err := client.Submit(ctx, SubmitParams{Tool: "echo", Input: json.RawMessage(input)})
							return err
						})
						b.ReportMetric(rate, "ops/s")
						benchVsPlain(b, rate, plain)
					})
				}
			}
		})
	}
}

// BenchmarkSubmitManyVsCopy measures, on the same eight connections:
//
//	copy         COPY (pgx CopyFrom, binary) of 100 rows into an unindexed
//	             table of submit_many's five arguments: the bulk ceiling
//	submit_many  ledger.submit_many of the same 100 requests
//
// Each op is one statement of 100 requests, autocommit; requests/s is the
// aggregate rate, vs_copy submit_many's rate over the same round's copy.
func BenchmarkSubmitManyVsCopy(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	if err := db.MapPrincipal(ctx, "postgres", "bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE bench_requests (tool text, input jsonb, run_id text, idempotency_key text, context jsonb)`); err != nil {
		b.Fatal(err)
	}
	conns := benchWorkers(b, db, benchConns)
	const size = 100
	tools, inputs, contexts := make([]string, size), make([]string, size), make([]string, size)
	rows := make([][]any, size)
	for i := range size {
		tools[i], inputs[i], contexts[i] = "echo", `{"text":"hello `+strconv.Itoa(i)+`"}`, "{}"
		rows[i] = []any{tools[i], inputs[i], nil, nil, contexts[i]}
	}
	columns := []string{"tool", "input", "run_id", "idempotency_key", "context"}
	for i, c := range conns { // warm up
		if _, err := c.CopyFrom(ctx, pgx.Identifier{"bench_requests"}, columns, pgx.CopyFromRows(rows)); err != nil {
			b.Fatalf("warm-up on connection %d: %v", i, err)
		}
		if _, err := c.Exec(ctx, querySubmitMany, tools, inputs, nil, nil, contexts); err != nil {
			b.Fatalf("warm-up on connection %d: %v", i, err)
		}
	}
	run := func(b *testing.B, op func(c *pgx.Conn) error) float64 {
		rate := size * benchParallel(b, len(conns), func(w int) error { return op(conns[w]) })
		b.ReportMetric(rate, "requests/s")
		return rate
	}
	for round := 1; round <= *benchRounds; round++ {
		b.Run(fmt.Sprintf("round=%d", round), func(b *testing.B) {
			var plain float64
			b.Run("copy", func(b *testing.B) {
				plain = run(b, func(c *pgx.Conn) error {
					_, err := c.CopyFrom(ctx, pgx.Identifier{"bench_requests"}, columns, pgx.CopyFromRows(rows))
					return err
				})
			})
			b.Run("submit_many", func(b *testing.B) {
				benchAssertNoWaiters(b, db)
				rate := run(b, func(c *pgx.Conn) error {
					_, err := c.Exec(ctx, querySubmitMany, tools, inputs, nil, nil, contexts)
					return err
				})
				if plain > 0 {
					b.ReportMetric(rate/plain, "vs_copy")
				}
			})
		})
	}
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
// ledger_request_pending and registers in ledger.queue_waiters; a submit
// that finds it registered takes the registration and NOTIFYs, and it
// registers again as soon as the notification arrives. stop unregisters it
// and waits for it to end.
func benchWaitingExecutor(b *testing.B, db *testdb.DB) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	for _, sql := range []string{
		"LISTEN ledger_request_pending",
		"INSERT INTO ledger.queue_waiters (executor) VALUES ('bench')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			cancel()
			conn.Close(context.Background())
			b.Fatal(err)
		}
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
			if _, err := conn.Exec(ctx, "INSERT INTO ledger.queue_waiters (executor) VALUES ('bench') ON CONFLICT DO NOTHING"); err != nil {
				return
			}
		}
	}()
	return func() {
		// A notification reaches the listener a moment after its commit.
		for deadline := time.Now().Add(5 * time.Second); received.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
		conn.Close(context.Background())
		if _, err := db.Pool.Exec(context.Background(), "DELETE FROM ledger.queue_waiters WHERE executor = 'bench'"); err != nil {
			b.Error(err)
		}
		if received.Load() == 0 {
			b.Error("the waiting executor received no notification: submit did not NOTIFY")
		}
	}
}

// BenchmarkAppendBatch measures Store.AppendBatch throughput: each call
// appends one batch of events, each event starting a stream of its own
// (NoStream), the way submit starts a request:<id> stream. One op is one
// call; events/s is the aggregate rate over all connections. Its baseline,
// plain_insert, inserts the same payloads as one multi-row INSERT into an
// unindexed table per call, from the same connections.
func BenchmarkAppendBatch(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	if _, err := db.Pool.Exec(ctx, benchPlainTable); err != nil {
		b.Fatal(err)
	}
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
	payload := func(id string) string { return `{"n":` + id + `,"text":"hello"}` }

	for round := 1; round <= *benchRounds; round++ {
		for _, size := range []int{100, 1000} {
			for _, workers := range []int{1, benchConns} {
				name := fmt.Sprintf("round=%d/events=%d/conns=%d", round, size, workers)
				b.Run(name, func(b *testing.B) {
					conns := make([]*pgxpool.Conn, workers)
					for i := range conns {
						c, err := pool.Acquire(ctx)
						if err != nil {
							b.Fatal(err)
						}
						defer c.Release()
						conns[i] = c
					}
					run := func(b *testing.B, op func(c *pgxpool.Conn, first int64) error) float64 {
						rate := float64(size) * benchParallel(b, workers, func(w int) error {
							return op(conns[w], seq.Add(int64(size))-int64(size))
						})
						b.ReportMetric(rate, "events/s")
						return rate
					}
					var plain float64
					// Both sides build their arguments in the timed loop, per call.
					b.Run("plain_insert", func(b *testing.B) {
						plain = run(b, func(c *pgxpool.Conn, first int64) error {
							rows := make([]string, size)
							for i := range rows {
								rows[i] = payload(strconv.FormatInt(first+int64(i), 10))
							}
							_, err := c.Exec(ctx, "INSERT INTO bench_plain(v) SELECT unnest($1::text[])", rows)
							return err
						})
					})
					b.Run("append", func(b *testing.B) {
						rate := run(b, func(c *pgxpool.Conn, first int64) error {
							batch := make([]StreamAppend, size)
							for i := range batch {
								id := strconv.FormatInt(first+int64(i), 10)
								batch[i] = StreamAppend{
									Stream:   "bench:" + id,
									Expected: NoStream,
									Events: []NewEvent{{
										Type:     "bench.appended",
										Payload:  json.RawMessage(payload(id)),
										Metadata: Metadata{Actor: "bench", CorrelationID: id},
									}},
								}
							}
							_, err := store.AppendBatch(ctx, c, batch)
							return err
						})
						benchVsPlain(b, rate, plain)
					})
				})
			}
		}
	}
}

// BenchmarkSubmitBatchSizes measures one connection submitting one request
// per ledger.submit against k requests per ledger.submit_many, autocommit:
// requests/s, and vs_submit, the rate over the same round's submit's. It
// shows from which batch size submit_many pays for its fixed cost.
func BenchmarkSubmitBatchSizes(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	if err := db.MapPrincipal(ctx, "postgres", "bench"); err != nil {
		b.Fatal(err)
	}
	conn := benchWorkers(b, db, 1)[0]
	const input = `{"text":"hello"}`
	for round := 1; round <= *benchRounds; round++ {
		b.Run(fmt.Sprintf("round=%d", round), func(b *testing.B) {
			var single float64
			b.Run("submit", func(b *testing.B) {
				single = benchStatement(b, []*pgx.Conn{conn}, querySubmit, "echo", input, nil, nil, "{}")
			})
			for _, k := range []int{1, 2, 4, 8, 16, 64} {
				tools, inputs, contexts := make([]string, k), make([]string, k), make([]string, k)
				for i := range k {
					tools[i], inputs[i], contexts[i] = "echo", input, "{}"
				}
				b.Run(fmt.Sprintf("submit_many=%d", k), func(b *testing.B) {
					if _, err := conn.Exec(ctx, querySubmitMany, tools, inputs, nil, nil, contexts); err != nil {
						b.Fatal(err)
					}
					rate := float64(k) * benchParallel(b, 1, func(int) error {
						_, err := conn.Exec(ctx, querySubmitMany, tools, inputs, nil, nil, contexts)
						return err
					})
					b.ReportMetric(rate, "requests/s")
					if single > 0 {
						b.ReportMetric(rate/single, "vs_submit")
					}
				})
			}
		})
	}
}
