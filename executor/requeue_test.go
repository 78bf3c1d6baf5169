package executor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
)

// TestRescuedRequestKeepsItsPlace: a request whose executor vanished after
// it started, and whose tool is safe to repeat, goes back to the queue
// where it was, ahead of the requests submitted after it, not behind the
// whole backlog.
func TestRescuedRequestKeepsItsPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, nil)
	e.stop() // the ghost claims; nothing else runs
	first := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "first"}})
	if got := claimAsGhost(t, e, true); got != first {
		t.Fatalf("ghost claimed %s, not %s", got, first)
	}
	var queued time.Time
	if err := e.db.Pool.QueryRow(ctx, "SELECT available_at FROM ledger.queue WHERE id = $1", first).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "later"}})
	}
	x, err := New(e.db.LoginRole(t, "", "ledger_executor").Pool, Config{Label: "rescuer"}, e.policy, e.signer,
		slog.New(slog.DiscardHandler), Echo{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := x.rescuer.rescueLeases(ctx); err != nil || n != 1 {
		t.Fatalf("rescued %d, %v", n, err)
	}
	var (
		next  uuid.UUID
		state string
		now   time.Time
	)
	if err := e.db.Pool.QueryRow(ctx, `SELECT (SELECT id FROM ledger.queue WHERE state = 'pending'
		ORDER BY priority DESC, available_at, id LIMIT 1), q.state, q.available_at FROM ledger.queue q WHERE q.id = $1`, first).
		Scan(&next, &state, &now); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || !now.Equal(queued) || next != first {
		t.Fatalf("after the rescue: %s, available at %s (queued at %s); the next claim takes %s, not %s", state, now, queued, next, first)
	}
}

// TestRescueGivesUpAfterMaxAttempts: a request whose lease is lost on its
// last allowed attempt ends failed (runtime_failure), attested, instead of
// going back to the front of the queue once more.
func TestRescueGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, nil)
	e.stop()
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "crasher"}})
	x, err := New(e.db.LoginRole(t, "", "ledger_executor").Pool, Config{Label: "rescuer", MaxAttempts: 2}, e.policy,
		e.signer, slog.New(slog.DiscardHandler), Echo{})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if got := claimAsGhost(t, e, true); got != id {
			t.Fatalf("attempt %d: ghost claimed %s, not %s", attempt, got, id)
		}
		if n, err := x.rescuer.rescueLeases(ctx); err != nil || n != 1 {
			t.Fatalf("attempt %d: rescued %d, %v", attempt, n, err)
		}
		r, err := e.alice.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case attempt == 1 && r.State != ledger.StatePending:
			t.Fatalf("after the first lost lease: %+v", r)
		case attempt == 2 && (r.State != ledger.StateFailed || r.ErrorKind == nil || *r.ErrorKind != "runtime_failure" ||
			!strings.Contains(*r.Error, "each of 2 attempts")):
			t.Fatalf("after the last lost lease: %+v", r)
		}
	}
	e.verifyAttestation(t, waitAttested(t, e, id))
}
