package executor

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// TestSubmitWakesWaitersOnce: the first submit after executors registered
// as waiters takes their registrations and sends one NOTIFY; the submits
// after it send none (a NOTIFY per submit serializes submitters' commits).
func TestSubmitWakesWaitersOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	exec := db.LoginRole(t, "", "ledger_executor")
	alice := ledger.NewClient(db.LoginRole(t, "alice", "ledger_submitter").Pool)
	defer alice.Close()
	for _, w := range []string{"w1", "w2"} {
		if _, err := exec.Pool.Exec(ctx, "SELECT ledger.register_waiter($1)", w); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+channelPending); err != nil {
		t.Fatal(err)
	}
	count := func(within time.Duration) int {
		n := 0
		for {
			wctx, cancel := context.WithTimeout(ctx, within)
			_, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return n
			}
			n++
		}
	}
	for i := range 3 {
		submit(t, alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
		if n := count(300 * time.Millisecond); n != map[bool]int{true: 1, false: 0}[i == 0] {
			t.Errorf("submit %d sent %d notifications", i+1, n)
		}
		var waiters int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.queue_waiters").Scan(&waiters); err != nil || waiters != 0 {
			t.Errorf("after submit %d: %d waiters registered (%v), want their registrations taken", i+1, waiters, err)
		}
	}
	// Registered again, woken again.
	if _, err := exec.Pool.Exec(ctx, "SELECT ledger.register_waiter('w1')"); err != nil {
		t.Fatal(err)
	}
	submit(t, alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "y"}})
	if n := count(300 * time.Millisecond); n != 1 {
		t.Errorf("after registering again: %d notifications, want 1", n)
	}
}

// TestIdleExecutorWakesEveryTime: an executor that polls only once a
// minute still runs each of several requests submitted one at a time with
// idle spells between them: woken by the first, it registers again once it
// finds the queue empty, so the next submit wakes it too.
func TestIdleExecutorWakesEveryTime(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.PollInterval = time.Minute })
	for i := range 4 {
		time.Sleep(300 * time.Millisecond) // idle: the executor registers
		id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "again"}})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		r, err := e.alice.Await(ctx, id)
		cancel()
		if err != nil || r.State != ledger.StateSucceeded {
			t.Fatalf("request %d: %+v, %v: an idle executor was not woken", i+1, r, err)
		}
	}
}

// TestEveryIdleExecutorWakes: one NOTIFY wakes every waiting executor and
// takes all their registrations; the one that then finds nothing to claim
// registers again, so the next submit wakes it while the other is busy.
// Both executors run one call at a time and poll once a minute: without
// the new registration, the echo would wait for the sleep to end.
func TestEveryIdleExecutorWakes(t *testing.T) {
	t.Parallel()
	one := func(c *Config) {
		c.PollInterval, c.Workers, c.ClaimBatch, c.ToolTimeout = time.Minute, 1, 1, time.Minute
	}
	e := setup(t, one)
	cfg := Config{Label: "exec-other"}
	one(&cfg)
	other, err := New(e.db.LoginRole(t, "", "ledger_executor").Pool, cfg, e.policy, e.signer, slog.New(slog.DiscardHandler), Echo{}, Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	e.start(t, other)
	waitWaiters(t, e, "both executors idle and registered", 2)
	slow := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 10000}})
	waitState(t, e.alice, slow, ledger.StateRunning)
	// One runs it; the other found nothing and registered again.
	waitWaiters(t, e, "the idle executor registered again", 1)
	fast := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "now"}}))
	s := await(t, e.alice, slow)
	if fast.State != ledger.StateSucceeded || s.State != ledger.StateSucceeded {
		t.Fatalf("states %s, %s", fast.State, s.State)
	}
	if !fast.FinishedAt.Before(*s.FinishedAt) {
		t.Errorf("the echo ended at %s, after the sleep (%s): the idle executor was not woken", fast.FinishedAt, s.FinishedAt)
	}
}

// TestOpenSubmitTransactionDoesNotStopExecutors: a submitter that keeps
// its transaction open after ledger.submit holds the registration its
// submit took, as long as it likes. Executors must neither wait for it
// (registering and unregistering never wait on a row another transaction
// holds) nor be silenced for longer than their poll interval: requests
// submitted meanwhile run, one after another.
func TestOpenSubmitTransactionDoesNotStopExecutors(t *testing.T) {
	t.Parallel()
	e := setup(t, nil) // polls every 200 ms
	ctx := context.Background()
	waitWaiters(t, e, "the executor idle and registered", 1)
	holder, err := e.aliceSQL.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT ledger.submit('echo', '{"text": "held"}')`); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "meanwhile"}})
		actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		r, err := e.alice.Await(actx, id)
		cancel()
		if err != nil || r.State != ledger.StateSucceeded {
			t.Fatalf("request %d while a submit transaction stays open: %+v, %v", i+1, r, err)
		}
		time.Sleep(300 * time.Millisecond) // idle again: the executor registers again
	}
}

// waitWaiters waits until n executors are registered as waiting for a
// NOTIFY (ledger.queue_waiters).
func waitWaiters(t *testing.T, e *env, what string, n int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var got int
		if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT executor) FROM ledger.queue_waiters`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %d executors registered, want %d", what, got, n)
		}
	}
}
