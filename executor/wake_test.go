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
	// count takes want notifications, waiting as long as it takes, then
	// whatever more arrives within a short spell: a spurious one sent with
	// the same commit is delivered with the expected one.
	count := func(want int) int {
		n := 0
		for {
			within := 300 * time.Millisecond
			if n < want {
				within = waitLong
			}
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
		want := map[bool]int{true: 1, false: 0}[i == 0]
		if n := count(want); n != want {
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
	if n := count(1); n != 1 {
		t.Errorf("after registering again: %d notifications, want 1", n)
	}
}

// waitRegistered waits until ledger.queue_waiters holds at least n
// registrations of the executor labelled label (of any when label is
// empty): idle, an executor asks submitters to wake it.
func waitRegistered(t *testing.T, e *env, label string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		var got int
		err := e.db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM ledger.queue_waiters WHERE $1 = '' OR executor = $1", label).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d registrations of executor %q as a waiter after %s, want %d", got, label, waitLong, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdleExecutorWakesEveryTime: an executor that polls only once an
// hour still runs each of several requests submitted one at a time with
// idle spells between them: woken by the first, it registers again once it
// finds the queue empty, so the next submit wakes it too.
func TestIdleExecutorWakesEveryTime(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.PollInterval = time.Hour })
	for i := range 4 {
		waitRegistered(t, e, "exec-test", 1) // idle: the executor registers
		id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "again"}})
		ctx, cancel := context.WithTimeout(context.Background(), waitLong) // far short of the poll
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
// Both executors run one call at a time and poll once an hour; the busy
// one's call runs until the test cancels it: without the new
// registration, the echo would wait for the poll.
func TestEveryIdleExecutorWakes(t *testing.T) {
	t.Parallel()
	one := func(c *Config) { c.PollInterval, c.Workers, c.ClaimBatch, c.ToolTimeout = time.Hour, 1, 1, time.Hour }
	b := newBlocker()
	e := setup(t, one, b)
	cfg := Config{Label: "exec-other"}
	one(&cfg)
	other, err := New(e.db.LoginRole(t, "", "ledger_executor").Pool, cfg, e.policy, e.signer, slog.New(slog.DiscardHandler), Echo{}, Sleep{}, b)
	if err != nil {
		t.Fatal(err)
	}
	e.start(t, other)
	waitRegistered(t, e, "exec-test", 1) // both idle and registered
	waitRegistered(t, e, "exec-other", 1)
	slow := submit(t, e.alice, ledger.SubmitParams{Tool: "test.block", Input: map[string]any{}})
	waitEntered(t, b.entered)   // one runs it, and has no worker left to register for
	waitRegistered(t, e, "", 1) // the other found nothing and registered again
	fast := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "now"}}))
	if fast.State != ledger.StateSucceeded {
		t.Fatalf("the echo beside a busy executor: %+v", fast)
	}
	if ok, err := e.alice.Cancel(context.Background(), slow, "done"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if s := await(t, e.alice, slow); s.State != ledger.StateCancelled {
		t.Fatalf("the blocked call: %+v", s)
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
	waitRegistered(t, e, "exec-test", 1) // idle: registered
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
		actx, cancel := context.WithTimeout(ctx, waitLong)
		r, err := e.alice.Await(actx, id)
		cancel()
		if err != nil || r.State != ledger.StateSucceeded {
			t.Fatalf("request %d while a submit transaction stays open: %+v, %v", i+1, r, err)
		}
		// Idle again, the executor registers again beside the registration
		// the open transaction took and still holds.
		waitRegistered(t, e, "exec-test", 2)
	}
}
