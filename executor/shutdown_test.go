package executor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// commitHoldKey is the advisory lock a claim's COMMIT waits for while the
// test holds it (installCommitHold).
const commitHoldKey = 7701

// installCommitHold makes every claim transaction take commitHoldKey
// (shared) while it commits, from a deferred constraint trigger on the
// claim's own queue update: a test that holds the key keeps a claim's
// COMMIT in flight, on the server, for as long as it likes.
//
// The wait outlasts a cancel request. A client whose context ends during
// COMMIT closes its connection and sends one (pgx does); in production
// the COMMIT, a few milliseconds of work, has usually ended by the time it
// lands, and commits although the client has given up. Waiting here for
// the test, the COMMIT would be the one thing the cancel stops; ignoring
// it keeps the server doing what it does when the cancel comes too late.
func installCommitHold(t *testing.T, e *env) {
	t.Helper()
	_, err := e.db.Pool.Exec(context.Background(), fmt.Sprintf(`
CREATE FUNCTION public.test_hold_claim_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(%d);
            RETURN NULL;
        EXCEPTION WHEN query_canceled THEN
            NULL; -- too late to cancel a COMMIT: wait on
        END;
    END LOOP;
END $$;
CREATE CONSTRAINT TRIGGER test_hold_claim_commit AFTER UPDATE ON ledger.queue
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.state = 'pending' AND NEW.state = 'running')
    EXECUTE FUNCTION public.test_hold_claim_commit();`, commitHoldKey))
	if err != nil {
		t.Fatal(err)
	}
}

// commitHolders counts the sessions waiting for commitHoldKey (waiting)
// and those holding or waiting for it (all).
func commitHolders(t *testing.T, e *env) (waiting, all int) {
	t.Helper()
	err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE NOT granted), count(*)
FROM pg_locks WHERE locktype = 'advisory' AND objid = $1`, commitHoldKey).Scan(&waiting, &all)
	if err != nil {
		t.Fatal(err)
	}
	return waiting, all
}

// waitUntil polls cond until it holds, failing the test after waitLong.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", waitLong, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopPoint is where a TestStopLeavesNoClaim round stops its executor:
// at a hook point, while a claim's COMMIT is in flight, or after a delay.
type stopPoint struct {
	point    hookPoint
	inCommit bool
	delay    time.Duration
}

func (s stopPoint) String() string {
	switch {
	case s.point != "":
		return string(s.point)
	case s.inCommit:
		return "claim commit in flight"
	}
	return "after " + s.delay.String()
}

// TestStopLeavesNoClaim stops executors at each point of the claim, run
// and complete cycle, while a claim's COMMIT is on its way, and after
// varying delays. Once Run has returned the executor holds no claim: each
// of its requests is final or pending, claimable at once rather than after
// its lease (ten minutes here) has expired.
func TestStopLeavesNoClaim(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	e.stop() // the rounds run executors of their own
	installCommitHold(t, e)

	var stops []stopPoint
	for _, p := range []hookPoint{hookClaimLocked, hookClaimDecided, hookClaimCommitted, hookRunBegin, hookRunEnd,
		hookCompleteBegin, hookCompleteEnd} {
		stops = append(stops, stopPoint{point: p})
	}
	stops = append(stops, stopPoint{inCommit: true})
	for i := range chaosSize(8, 40) {
		stops = append(stops, stopPoint{delay: time.Duration(i*9) * time.Millisecond})
	}
	var all []uuid.UUID
	for round, sp := range stops {
		var ids []uuid.UUID
		for i := range 6 {
			p := ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint(round, "/", i)}}
			if i%2 == 1 {
				p = ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 150}}
			}
			ids = append(ids, submit(t, e.alice, p))
		}
		all = append(all, ids...)
		// Every other round, calls still running when the stop arrives are
		// stopped at once (cancelled) instead of finishing.
		grace := 5 * time.Second
		if round%2 == 1 {
			grace = time.Millisecond
		}
		label := fmt.Sprintf("stop-%02d", round)
		stopAndCheck(t, e, label, sp, grace, ids)
	}

	// What the stopped executors left pending another takes at once.
	x, err := New(e.execSQL.Pool, Config{Label: "drain", PollInterval: 50 * time.Millisecond}, e.policy, e.signer,
		slog.New(slog.DiscardHandler), Echo{}, Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	e.start(t, x)
	for _, id := range all {
		if r := await(t, e.alice, id); !r.State.Final() {
			t.Fatalf("request %s is %s", id, r.State)
		}
	}
}

// stopAndCheck runs one executor labelled label, stops it at sp, and
// checks what it left behind among ids once Run has returned.
func stopAndCheck(t *testing.T, e *env, label string, sp stopPoint, grace time.Duration, ids []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	x, err := New(e.execSQL.Pool, Config{Label: label, Workers: 4, ClaimBatch: 3, Lease: 10 * time.Minute,
		PollInterval: 50 * time.Millisecond, ShutdownGrace: grace}, e.policy, e.signer, slog.New(slog.DiscardHandler), Echo{}, Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	reached := make(chan struct{})
	if sp.point != "" {
		var once sync.Once
		x.hooks.at = func(p hookPoint) {
			if p == sp.point {
				once.Do(func() { stop(); close(reached) })
			}
		}
	}
	var hold *holdConn
	if sp.inCommit {
		hold = holdCommits(t, e)
		defer hold.release(t)
	}
	done := make(chan error, 1)
	go func() { done <- x.Run(runCtx) }()
	switch {
	case sp.point != "":
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the executor never reached %s", label, sp.point)
		}
	case sp.inCommit:
		waitUntil(t, "a claim committing", func() bool { w, _ := commitHolders(t, e); return w > 0 })
		stop()
		// The stop must not cut the claim off from its commit. An executor
		// that lets it returns from Run at once, the claim's COMMIT still
		// waiting here; one that does not cannot return before the COMMIT
		// is let through. Give the first kind the time to show itself.
		select {
		case err := <-done:
			done <- err
		case <-time.After(2 * time.Second):
		}
		hold.release(t)
	default:
		time.Sleep(sp.delay) // the stop point itself, not a wait for something
		stop()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: Run: %v", label, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s: Run did not return within a minute of the stop at %s", label, sp)
	}
	if sp.inCommit {
		// The COMMIT let through ends (committed) even when nobody awaits it.
		waitUntil(t, "the held claim to end", func() bool { _, n := commitHolders(t, e); return n == 0 })
	}
	checkNothingHeld(t, e, label, sp, ids)
}

// checkNothingHeld fails the test if any queue row is still claimed by
// label, or any of ids is neither final nor pending.
func checkNothingHeld(t *testing.T, e *env, label string, sp stopPoint, ids []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.db.Pool.Query(ctx, `SELECT q.id, q.state FROM ledger.queue q WHERE q.claimed_by = $1`, label)
	if err != nil {
		t.Fatal(err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		ID    uuid.UUID
		State string
	}])
	if err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Fatalf("stopped %s at %s: Run returned still holding %d claims: %+v", label, sp, len(held), held)
	}
	rows, err = e.db.Pool.Query(ctx, `SELECT u.id, r.state, q.state
FROM unnest($1::uuid[]) AS u(id) JOIN ledger.request_status r ON r.id = u.id LEFT JOIN ledger.queue q ON q.id = u.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	states, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		ID      uuid.UUID
		Request ledger.State
		Queue   *string
	}])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if !s.Request.Final() && (s.Queue == nil || *s.Queue != "pending") {
			t.Fatalf("stopped %s at %s: request %s is %s (queue %v), neither final nor pending", label, sp, s.ID, s.Request, s.Queue)
		}
	}
}

// holdConn holds commitHoldKey on a connection of its own.
type holdConn struct {
	conn *pgx.Conn
	once sync.Once
}

func holdCommits(t *testing.T, e *env) *holdConn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, commitHoldKey); err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	return &holdConn{conn: conn}
}

// release lets the held COMMITs through; a second call does nothing.
func (h *holdConn) release(t *testing.T) {
	h.once.Do(func() {
		if err := h.conn.Close(context.Background()); err != nil { // ends the session and its lock
			t.Error(err)
		}
	})
}
