package executor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// TestTenThousandRequests is the acceptance run: alice's echo is
// allowed and bob's denied by Cedar; 10,000 requests all end final, with
// the right state, the right events in the right order per stream, and an
// attestation each whose signature and subjects verify.
func TestTenThousandRequests(t *testing.T) {
	t.Parallel()
	const total, submitters = 10000, 8
	// A lease of its own: setup's 5 s is for the tests of rescue, and on a
	// loaded machine a claim of 64 signed requests or a heartbeat can take
	// longer, which would add lease.expired to the streams checked here.
	e := setup(t, func(c *Config) { c.Lease = 30 * time.Second })
	ctx := context.Background()

	var mu sync.Mutex
	want := map[uuid.UUID]ledger.State{}
	var wg sync.WaitGroup
	errs := make(chan error, submitters)
	for s := range submitters {
		wg.Go(func() {
			for i := s; i < total; i += submitters {
				c, state := e.alice, ledger.StateSucceeded
				if i%4 == 3 {
					c, state = e.bob, ledger.StateDenied
				}
				id, err := c.Submit(ctx, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint("m", i)}})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				want[id] = state
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// However slow the machine, requests keep ending: only a spell with no
	// progress at all is a hang.
	waitProgress(t, "requests still not final", func() int {
		var open int
		if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.request_status WHERE finished_at IS NULL").Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open
	})

	// States, and the exact event sequence of every stream.
	rows, err := e.db.Pool.Query(ctx, `SELECT r.id, r.state, coalesce(r.error_kind, ''), r.attestation_digest,
       string_agg(e.type, ' ' ORDER BY e.version), count(*) = max(e.version)
FROM ledger.request_status r JOIN ledger.events e ON e.stream = 'request:' || r.id
GROUP BY r.id, r.state, r.error_kind, r.attestation_digest`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close() // a failure below must not keep its connection from the database's drop
	sequences := map[ledger.State]string{
		ledger.StateSucceeded: "tool.requested request.decided execution.completed",
		ledger.StateDenied:    "tool.requested request.decided attestation.signed",
	}
	seen := 0
	for rows.Next() {
		var id uuid.UUID
		var state ledger.State
		var kind, seq string
		var digest *string
		var gapless bool
		if err := rows.Scan(&id, &state, &kind, &digest, &seq, &gapless); err != nil {
			t.Fatal(err)
		}
		seen++
		if state != want[id] || seq != sequences[state] || !gapless || digest == nil ||
			(state == ledger.StateDenied && kind != "policy_denied") {
			t.Fatalf("request %s: state %s (want %s), kind %q, events %q, gapless %v", id, state, want[id], kind, seq, gapless)
		}
	}
	if err := rows.Err(); err != nil || seen != total {
		t.Fatalf("checked %d of %d requests (%v)", seen, total, err)
	}

	// Every attestation: signature, subjects against the exact bytes, and
	// the digest the read model points to.
	rows, err = e.db.Pool.Query(ctx, `SELECT r.id, r.attestation_digest, a.payload ->> 'envelope',
       (q.payload -> 'input')::text, (f.payload -> 'output')::text
FROM ledger.request_status r
JOIN ledger.events a ON a.stream = 'request:' || r.id AND a.type IN ('attestation.signed', 'execution.completed')
JOIN ledger.events q ON q.stream = 'request:' || r.id AND q.version = 1
LEFT JOIN ledger.events f ON f.stream = 'request:' || r.id AND f.type IN ('execution.finished', 'execution.completed')`)
	if err != nil {
		t.Fatal(err)
	}
	verified := 0
	for rows.Next() {
		var id uuid.UUID
		var digest, envelope, input string
		var output *string
		if err := rows.Scan(&id, &digest, &envelope, &input, &output); err != nil {
			t.Fatal(err)
		}
		st, err := attest.Verify([]byte(envelope), e.pub)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var out []byte
		if output != nil && *output != "null" {
			out = []byte(*output)
		}
		if err := st.VerifySubjects([]byte(input), out); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if attest.Digest([]byte(envelope)) != digest || st.Predicate.RequestID != id.String() {
			t.Fatalf("%s: digest or request id mismatch", id)
		}
		wantDecision := "allow"
		if want[id] == ledger.StateDenied {
			wantDecision = "deny"
		}
		if st.Predicate.Decision != wantDecision {
			t.Fatalf("%s: decision %s", id, st.Predicate.Decision)
		}
		verified++
	}
	if err := rows.Err(); err != nil || verified != total {
		t.Fatalf("verified %d of %d attestations (%v)", verified, total, err)
	}
	var queued int
	if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.queue").Scan(&queued); err != nil || queued != 0 {
		t.Fatalf("the queue kept %d rows", queued)
	}
}

// waitProgress waits until left() is 0. It fails only when left() has not
// gone down for waitLong: a busy machine makes the work slower, not stuck.
func waitProgress(t *testing.T, what string, left func() int) {
	t.Helper()
	best := left()
	since := time.Now()
	for best > 0 {
		time.Sleep(100 * time.Millisecond)
		if n := left(); n < best {
			best, since = n, time.Now()
		}
		if time.Since(since) > waitLong {
			t.Fatalf("%d %s, none of them ending for %s", best, what, waitLong)
		}
	}
}
