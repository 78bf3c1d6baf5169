package export_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
)

// TestExportTakesACleanCheckpoint: a request cancelled in SQL has its
// outcome sealed before any executor attests it. Checkpoints signed in
// between are not clean, and a bundle proved against one would hold an
// unattested outcome: export takes the clean one before, until an
// executor has attested the request and a newer one holds both.
func TestExportTakesACleanCheckpoint(t *testing.T) {
	t.Parallel()
	l := newTestLog(t)
	l.startSealer(t)
	ctx := context.Background()
	id := l.submit(t, l.alice, "echo", map[string]any{"text": "never run"})
	eventually(t, "tool.requested under a published checkpoint", func() bool {
		n := l.sealedBelow(t, id)
		return n > 0 && l.published(t) >= n
	})
	clean := l.published(t)
	if ok, err := l.alice.Cancel(ctx, id, "no executor"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	eventually(t, "request.cancelled under a published checkpoint", func() bool {
		n := l.sealedBelow(t, id)
		return n > clean && l.published(t) >= n
	})

	full := export.Options{Scope: bundle.Scope{Full: true}, Wait: 300 * time.Millisecond}
	b, sum, err := l.exportBytes(t, full)
	if err != nil {
		t.Fatal(err)
	}
	u := sum.Choice.Unclean
	if got := sum.Choice.Checkpoint.Size; got < clean || got >= l.sealedBelow(t, id) || u == nil ||
		u.Request != id.String() || u.Outcome != "request.cancelled" || sum.Choice.Waited < 300*time.Millisecond {
		t.Fatalf("export took checkpoint %d (clean %d), unclean %v, waited %s", got, clean, u, sum.Choice.Waited)
	}
	if rep := l.verify(t, b); !rep.OK || rep.Attestations != 0 || rep.Requests != 1 {
		t.Fatalf("the bundle before the cancel: %+v", rep)
	}
	// Not waiting at all, it takes the same one.
	if _, sum, err := l.exportBytes(t, export.Options{Scope: bundle.Scope{Full: true}, Wait: -1}); err != nil ||
		sum.Choice.Waited > 200*time.Millisecond || sum.Choice.Checkpoint.Size >= l.sealedBelow(t, id) {
		t.Fatalf("export without waiting: %v, %+v", err, sum.Choice)
	}

	// verify --db meanwhile: the newest clean checkpoint too, and the
	// request pending in the read model (ended less than a minute ago).
	rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{Wait: -1})
	if err != nil || !rep.OK || rep.Unclean == nil || rep.ReadModel.Pending != 1 || rep.ReadModel.PendingRequests[0] != id.String() {
		t.Fatalf("VerifyDB before the attestation: %v %+v", err, rep)
	}
	// Ended longer ago than PendingAfter, it is a fault.
	rep, err = export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{Wait: -1, PendingAfter: time.Nanosecond})
	if err != nil || rep.OK || rep.Fault.Code != bundle.MissingAttestation || rep.Fault.Stream != "request:"+id.String() {
		t.Fatalf("VerifyDB with no time to attest: %v %+v", err, rep)
	}

	// An executor attests it; waiting, export takes the checkpoint that
	// holds the attestation.
	l.startExecutor(t)
	b, sum, err = l.exportBytes(t, export.Options{Scope: bundle.Scope{Full: true}, Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Choice.Unclean != nil || sum.Choice.Checkpoint.Size < l.sealedBelow(t, id) {
		t.Fatalf("export after the attestation took %+v", sum.Choice)
	}
	if rep := l.verify(t, b); !rep.OK || rep.Attestations != 1 {
		t.Fatalf("the bundle after the attestation: %+v", rep)
	}
}

// TestExportWithoutACleanCheckpoint: when every checkpoint holds an
// unattested outcome, export says which; VerifyDB verifies the newest and
// reports the outcome.
func TestExportWithoutACleanCheckpoint(t *testing.T) {
	t.Parallel()
	l := newTestLog(t)
	ctx := context.Background()
	id := l.submit(t, l.alice, "echo", map[string]any{"text": "never run"})
	if ok, err := l.alice.Cancel(ctx, id, "no executor"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	_, _, err := l.exportBytes(t, export.Options{Scope: bundle.Scope{Full: true}, Wait: -1})
	if !errors.Is(err, export.ErrNoCheckpoint) || !strings.Contains(err.Error(), "is serve running with [sealer] note_key_file?") {
		t.Fatalf("export before any checkpoint: %v", err)
	}
	l.startSealer(t)
	eventually(t, "a published checkpoint", func() bool { return l.published(t) >= l.sealedBelow(t, id) && l.published(t) > 0 })
	_, _, err = l.exportBytes(t, export.Options{Scope: bundle.Scope{Full: true}, Wait: -1})
	if !errors.Is(err, export.ErrNoCleanCheckpoint) || !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("export with no clean checkpoint: %v", err)
	}
	rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{Wait: -1})
	if err != nil || rep.OK || rep.Fault.Code != bundle.MissingAttestation || rep.Fault.Stream != "request:"+id.String() {
		t.Fatalf("VerifyDB: %v %+v", err, rep)
	}
}

// TestExportSelections: a request, a principal, a time range; each bundle
// holds whole request streams and the checkpoints their attestations
// name, and verifies.
func TestExportSelections(t *testing.T) {
	t.Parallel()
	l := newTestLog(t)
	l.startSealer(t)
	l.startExecutor(t)
	ctx := context.Background()
	// The log has a checkpoint before the requests run: their
	// attestations name one, which their bundles must hold.
	warm := l.submit(t, l.bob, "sleep", map[string]any{"ms": 1})
	l.awaitCovered(t, l.bob, warm)
	time.Sleep(250 * time.Millisecond) // the executor's copy of the newest checkpoint is at most 200 ms old
	first := l.submit(t, l.alice, "echo", map[string]any{"text": "first"})
	l.awaitCovered(t, l.alice, first)
	mid := time.Now()
	second := l.submit(t, l.alice, "echo", map[string]any{"text": "second"})
	denied := l.submit(t, l.bob, "echo", map[string]any{"text": "not for bob"})
	l.awaitCovered(t, l.alice, second)
	l.awaitCovered(t, l.bob, denied)

	for _, tc := range []struct {
		name     string
		scope    bundle.Scope
		requests int64
	}{
		{"one request", bundle.Scope{Request: denied.String()}, 1},
		{"alice", bundle.Scope{Principal: "alice"}, 2},
		{"alice since", bundle.Scope{Principal: "alice", Since: &mid}, 1},
		{"until", bundle.Scope{Until: &mid}, 2},
		{"since", bundle.Scope{Since: &mid}, 2},
	} {
		b, sum, err := l.exportBytes(t, export.Options{Scope: tc.scope})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rep := l.verify(t, b)
		if !rep.OK || rep.Requests != tc.requests || rep.Attestations != tc.requests || sum.Requests != tc.requests ||
			sum.Selected != tc.requests || sum.Unsealed != 0 || sum.Checkpoints < 2 {
			t.Errorf("%s: %+v; %d events, %d requests (%d selected, %d events unsealed), %d checkpoints",
				tc.name, rep, sum.Events, sum.Requests, sum.Selected, sum.Unsealed, sum.Checkpoints)
		}
	}
	if _, _, err := l.exportBytes(t, export.Options{Scope: bundle.Scope{Request: "0193aaaa-0000-7000-8000-000000000000"}}); !errors.Is(err, export.ErrNoRequest) {
		t.Errorf("an unknown request: %v", err)
	}
	if _, _, err := l.exportBytes(t, export.Options{Scope: bundle.Scope{Full: true, Principal: "alice"}}); err == nil {
		t.Error("a full scope with a filter")
	}
	rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{})
	if err != nil || !rep.OK || rep.ReadModel.Final != 4 || rep.ReadModel.Pending != 0 || !rep.Published {
		t.Errorf("VerifyDB: %v %+v", err, rep)
	}
}

// TestVerifyDBFindsTampering: what a superuser changes behind the
// triggers' back is found: an event's bytes, an event removed, and a read
// model row that names another attestation.
func TestVerifyDBFindsTampering(t *testing.T) {
	t.Parallel()
	l := newTestLog(t)
	l.startSealer(t)
	l.startExecutor(t)
	ctx := context.Background()
	id := l.submit(t, l.alice, "echo", map[string]any{"text": "to tamper with"})
	l.awaitCovered(t, l.alice, id)
	if rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("VerifyDB before tampering: %v %+v", err, rep)
	}
	stream := "request:" + id.String()
	su := func(q string, args ...any) {
		t.Helper()
		if _, err := l.db.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var leaf uint64
	if err := l.db.Pool.QueryRow(ctx, `SELECT l.leaf_index FROM ledger.events e JOIN ledger.log_leaves l ON l.position = e.position
WHERE e.stream = $1 AND e.version = 1`, stream).Scan(&leaf); err != nil {
		t.Fatal(err)
	}
	wantFault := func(what, code string, leaf *uint64) {
		t.Helper()
		rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{})
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case rep.OK || rep.Fault.Code != code || rep.Fault.Stream != stream && code != bundle.MissingEvent ||
			leaf != nil && (rep.Fault.Leaf == nil || *rep.Fault.Leaf != *leaf):
			t.Fatalf("%s: %+v, want %s", what, rep.Fault, code)
		}
	}

	su("UPDATE ledger.request_status SET attestation_digest = 'sha256:' || repeat('0', 64) WHERE id = $1", id)
	wantFault("the read model names another attestation", bundle.MissingAttestation, nil)
	su("UPDATE ledger.request_status r SET attestation_digest = e.payload ->> 'attestation_digest' FROM ledger.events e WHERE r.id = $1 AND e.stream = $2 AND e.type IN ('attestation.signed', 'execution.completed')", id, stream)

	su("ALTER TABLE ledger.events DISABLE TRIGGER USER")
	var payload string
	if err := l.db.Pool.QueryRow(ctx, "SELECT payload::text FROM ledger.events WHERE stream = $1 AND version = 1", stream).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	su("UPDATE ledger.events SET payload = replace(payload::text, 'to tamper with', 'tampered with!')::json WHERE stream = $1 AND version = 1", stream)
	wantFault("an event's bytes changed", bundle.HashMismatch, &leaf)
	ps, err := export.Prove(ctx, l.auditor.Pool, id.String())
	if err != nil || !ps.Events[0].Mismatch || ps.Events[0].Proof != nil || ps.Events[1].Proof == nil {
		t.Fatalf("Prove of a changed event: %v %+v", err, ps.Events[0])
	}
	su("UPDATE ledger.events SET payload = $2::json WHERE stream = $1 AND version = 1", stream, payload)
	if rep, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("VerifyDB after the bytes are put back: %v %+v", err, rep)
	}

	su("DELETE FROM ledger.events WHERE stream = $1 AND version = 1", stream)
	wantFault("an event removed", bundle.MissingEvent, &leaf)
}

// TestProve: each event of a request, proved against the newest
// published checkpoint; an unknown request is ErrNoRequest.
func TestProve(t *testing.T) {
	t.Parallel()
	l := newTestLog(t)
	ctx := context.Background()
	id := l.submit(t, l.alice, "echo", map[string]any{"text": "prove me"})
	ps, err := export.Prove(ctx, l.auditor.Pool, id.String())
	if err != nil || ps.Checkpoint != nil || ps.Provable() != 0 || len(ps.Events) != 1 || ps.Events[0].Leaf != nil {
		t.Fatalf("Prove before the log seals anything: %v %+v", err, ps)
	}
	l.startSealer(t)
	l.startExecutor(t)
	l.awaitCovered(t, l.alice, id)
	if ps, err = export.Prove(ctx, l.auditor.Pool, id.String()); err != nil || ps.Provable() != len(ps.Events) || len(ps.Events) < 3 {
		t.Fatalf("Prove: %v %+v", err, ps)
	}
	root := ps.Checkpoint.Root
	for _, e := range ps.Events {
		if err := checkProof(e, root, l.logKey); err != nil {
			t.Errorf("version %d: %v", e.Event.Version, err)
		}
	}
	if _, err := export.Prove(ctx, l.auditor.Pool, "0193aaaa-0000-7000-8000-000000000000"); !errors.Is(err, export.ErrNoRequest) {
		t.Errorf("Prove of an unknown request: %v", err)
	}
}
