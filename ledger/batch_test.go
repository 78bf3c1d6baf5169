package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// occupy fills every in-flight slot of c's batcher, as calls in flight
// would, so that the next calls queue; free hands the slots back, which
// sends the queue.
func occupy(c *Client) (free func()) {
	b := c.submits
	b.mu.Lock()
	n := b.maxInFlight - b.inFlight
	b.inFlight = b.maxInFlight
	b.mu.Unlock()
	return func() {
		for range n {
			b.release()
		}
	}
}

// waitQueued waits until n calls are queued in c's batcher.
func waitQueued(t *testing.T, c *Client, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.submits.mu.Lock()
		got := len(c.submits.queue)
		c.submits.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", got, n)
		}
	}
}

type submitResult struct {
	id  uuid.UUID
	err error
}

// TestSubmitBatchesQueuedCalls: calls that queue behind calls in flight go
// out together, in one transaction, and each caller gets its own result:
// the callers whose element the ledger refuses get submit's error for it,
// the others their ids; a caller whose context ends in the queue is not
// submitted.
func TestSubmitBatchesQueuedCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	c := s.alice

	type call struct {
		p    SubmitParams
		ctx  context.Context
		want string // "ok", "invalid", "conflict-or-ok", "cancelled"
	}
	var calls []call
	for i := range 20 {
		p := SubmitParams{Tool: "echo", Input: map[string]any{"n": i}}
		if i%3 == 0 {
			p.RunID = fmt.Sprintf("run-%d", i%2)
		}
		calls = append(calls, call{p: p, want: "ok"})
		if i%7 == 3 {
			calls = append(calls, call{p: SubmitParams{Tool: fmt.Sprintf("bad tool %d", i), Input: map[string]any{}}, want: "invalid"})
		}
	}
	dup := SubmitParams{Tool: "echo", Input: map[string]any{"n": "dup"}, IdempotencyKey: "dup"}
	calls = append(calls, call{p: dup, want: "dup"}, call{p: dup, want: "dup"})
	calls = append(calls,
		call{p: SubmitParams{Tool: "echo", Input: map[string]any{"v": 1}, IdempotencyKey: "conflict"}, want: "conflict-or-ok"},
		call{p: SubmitParams{Tool: "echo", Input: map[string]any{"v": 2}, IdempotencyKey: "conflict"}, want: "conflict-or-ok"})
	cancelCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls = append(calls, call{p: SubmitParams{Tool: "echo", Input: map[string]any{"n": "cancelled"}}, ctx: cancelCtx, want: "cancelled"})

	free := occupy(c)
	results := make([]submitResult, len(calls))
	var wg sync.WaitGroup
	for i, cl := range calls {
		cctx := cl.ctx
		if cctx == nil {
			cctx = ctx
		}
		wg.Go(func() {
			results[i].id, results[i].err = c.Submit(cctx, cl.p)
		})
	}
	waitQueued(t, c, len(calls))
	cancel()
	waitQueued(t, c, len(calls)-1) // the cancelled call has left the queue
	free()
	wg.Wait()

	var dupID uuid.UUID
	conflicts, winners := 0, 0
	var ok []uuid.UUID
	for i, cl := range calls {
		r := results[i]
		switch cl.want {
		case "ok":
			if r.err != nil {
				t.Errorf("call %d (%+v): %v", i, cl.p, r.err)
			}
			ok = append(ok, r.id)
		case "invalid":
			// The very error a call of its own gets.
			_, own := Submit(ctx, s.aliceRole.Pool, cl.p)
			if !errors.Is(r.err, ErrInvalidInput) || own == nil || r.err.Error() != own.Error() {
				t.Errorf("call %d: %v; a call of its own: %v", i, r.err, own)
			}
		case "dup":
			if r.err != nil || (dupID != uuid.Nil && r.id != dupID) {
				t.Errorf("call %d with key dup: %s, %v (other: %s)", i, r.id, r.err, dupID)
			}
			dupID = r.id
			ok = append(ok, r.id)
		case "conflict-or-ok":
			switch {
			case r.err == nil:
				winners++
				ok = append(ok, r.id)
			case errors.Is(r.err, ErrIdempotencyConflict):
				conflicts++
			default:
				t.Errorf("call %d with key conflict: %v", i, r.err)
			}
		case "cancelled":
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("cancelled call: %s, %v", r.id, r.err)
			}
		}
	}
	if winners != 1 || conflicts != 1 {
		t.Errorf("key conflict: %d succeeded, %d refused; want 1 and 1", winners, conflicts)
	}
	// The ones that went through went in one transaction.
	var txs, requests int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(DISTINCT e.tx_id), count(*) FROM ledger.events e
		WHERE e.stream = ANY (SELECT 'request:' || x FROM unnest($1::uuid[]) x)`, ok).Scan(&txs, &requests); err != nil {
		t.Fatal(err)
	}
	if txs != 1 || requests != len(ok)-1 { // the two dup calls share one request
		t.Errorf("%d requests in %d transactions; want %d in one", requests, txs, len(ok)-1)
	}
	if n := countRows(t, s.db, "ledger.events"); n != len(ok)-1 {
		t.Errorf("%d events; want %d (the cancelled call is not submitted)", n, len(ok)-1)
	}
	// Every request's input is its caller's.
	for i, cl := range calls {
		if cl.want != "ok" {
			continue
		}
		var n int
		if err := s.db.Pool.QueryRow(ctx, `SELECT (payload->'input'->>'n')::int FROM ledger.events WHERE stream = 'request:' || $1`,
			results[i].id.String()).Scan(&n); err != nil || n != cl.p.Input.(map[string]any)["n"] {
			t.Errorf("call %d: request %s has input n=%d, %v", i, results[i].id, n, err)
		}
	}
	b := c.submits
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight != 0 || len(b.queue) != 0 {
		t.Errorf("after the calls: %d in flight, %d queued", b.inFlight, len(b.queue))
	}
}

// TestSubmitBatchSharesACallError: an error that is no element's goes to
// every caller of the batch.
func TestSubmitBatchSharesACallError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	unmapped := NewClient(s.db.LoginRole(t, "", "ledger_submitter").Pool)
	defer unmapped.Close()
	free := occupy(unmapped)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = unmapped.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{"i": i}})
		})
	}
	waitQueued(t, unmapped, len(errs))
	free()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrNotPermitted) {
			t.Errorf("caller %d: %v", i, err)
		}
	}
}

// TestSubmitConcurrentCallers: many goroutines submitting through one
// Client (run with -race): every call gets a distinct id whose request
// holds its input, and nothing else is recorded.
func TestSubmitConcurrentCallers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	const callers, each = 16, 25
	ids := make([][]uuid.UUID, callers)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				// Calls 20..24 repeat calls 0..4: same key, same input.
				j := i % 20
				id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{"g": g, "i": j},
					IdempotencyKey: fmt.Sprintf("%d/%d", g, j)})
				if err != nil {
					t.Errorf("caller %d, call %d: %v", g, i, err)
					return
				}
				ids[g] = append(ids[g], id)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[uuid.UUID]bool{}
	for g := range callers {
		for i, id := range ids[g] {
			if i >= 20 {
				if id != ids[g][i-20] {
					t.Errorf("caller %d, call %d: %s; the first call with its key got %s", g, i, id, ids[g][i-20])
				}
				continue
			}
			if seen[id] {
				t.Errorf("caller %d, call %d: id %s given twice", g, i, id)
			}
			seen[id] = true
			var gg, ii int
			if err := s.db.Pool.QueryRow(ctx, `SELECT (payload->'input'->>'g')::int, (payload->'input'->>'i')::int
				FROM ledger.events WHERE stream = 'request:' || $1`, id.String()).Scan(&gg, &ii); err != nil || gg != g || ii != i {
				t.Errorf("caller %d, call %d: request %s holds g=%d i=%d, %v", g, i, id, gg, ii, err)
			}
		}
	}
	if n := countRows(t, s.db, "ledger.request_status"); n != callers*20 {
		t.Errorf("%d requests, want %d", n, callers*20)
	}
	var batches int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT tx_id FROM ledger.events GROUP BY tx_id HAVING count(*) > 1) b`).Scan(&batches); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests, %d transactions of more than one", callers*20, batches)
}

// TestSubmitBatchInFlightCancellation: a caller whose context ends while
// its batch is in flight gets the context's error at once, and the batch
// goes on for the others (its request may be recorded); the statement is
// cancelled only when every caller of the batch has gone.
func TestSubmitBatchInFlightCancellation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	c := s.alice

	// A transaction holding the lock of key "blk" keeps a batch with that
	// key in flight.
	hold := func() (release func()) {
		tx, err := s.db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('idempotency:alice/blk', 0))`); err != nil {
			t.Fatal(err)
		}
		return func() { tx.Rollback(ctx) }
	}
	waitBlocked := func() {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var n int
			if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the batch never waited for the key's lock")
			}
		}
	}

	for _, everyone := range []bool{false, true} {
		release := hold()
		free := occupy(c)
		ctxA, cancelA := context.WithCancel(ctx)
		ctxB, cancelB := context.WithCancel(ctx)
		runs := fmt.Sprintf("everyone-%t", everyone)
		var a, b submitResult
		aDone, bDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(aDone)
			a.id, a.err = c.Submit(ctxA, SubmitParams{Tool: "echo", Input: map[string]any{"who": "a"}, IdempotencyKey: "blk", RunID: runs})
		}()
		waitQueued(t, c, 1)
		go func() {
			defer close(bDone)
			b.id, b.err = c.Submit(ctxB, SubmitParams{Tool: "echo", Input: map[string]any{"who": "b"}, RunID: runs})
		}()
		waitQueued(t, c, 2)
		free()
		waitBlocked()
		cancelA()
		if everyone {
			cancelB()
		}
		gone := []chan struct{}{aDone}
		if everyone {
			gone = append(gone, bDone)
		}
		for _, ch := range gone {
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				t.Fatal("a caller whose context ended did not return")
			}
		}
		if !everyone {
			// A has returned; the batch still waits for the lock, for B.
			var n int
			if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Error("the batch stopped waiting when one of its two callers left")
			}
		}
		release()
		<-bDone
		cancelB()
		// The batch's goroutine is done once the batcher is idle again.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			c.submits.mu.Lock()
			idle := c.submits.inFlight == 0
			c.submits.mu.Unlock()
			if idle {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the batcher stayed busy")
			}
		}
		if !errors.Is(a.err, context.Canceled) {
			t.Errorf("everyone=%t: caller A: %s, %v", everyone, a.id, a.err)
		}
		var n int
		if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.request_status WHERE run_id = $1`, runs).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if everyone {
			// Nobody waits: the statement was cancelled, nothing recorded.
			if !errors.Is(b.err, context.Canceled) || n != 0 {
				t.Errorf("everyone gone: caller B %s, %v; %d requests recorded", b.id, b.err, n)
			}
		} else if b.err != nil || n != 2 {
			// B's batch went on, A's request with it.
			t.Errorf("caller B: %s, %v; %d requests recorded, want 2", b.id, b.err, n)
		}
	}
}
