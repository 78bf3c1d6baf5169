package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/readmodel"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// Issue 22's findings 1-3: what a submitter reads changed by a superuser
// while the log stays intact. Each must make verify --db fail, with the
// request named.

// verifyDBFault runs verify --db as the auditor and wants exit 3 with code.
func (x *tampered) verifyDBFault(t *testing.T, code string) *bundle.Fault {
	t.Helper()
	r := execute(t, x.auditor, "", "verify", "--db", "--json", "--wait", "0s", "--log-key", x.logPub, "--attest-key", x.attestPub)
	var rep struct {
		OK    bool          `json:"ok"`
		Fault *bundle.Fault `json:"fault"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("verify --db: %v: %+v", err, r)
	}
	if r.code != exitNotOK || rep.OK || rep.Fault == nil || rep.Fault.Code != code {
		t.Fatalf("verify --db: exit %d, fault %+v; want exit %d and fault %s (stderr %s)", r.code, rep.Fault, exitNotOK, code, r.stderr)
	}
	return rep.Fault
}

// verifyDBOK runs verify --db as the auditor and wants exit 0.
func (x *tampered) verifyDBOK(t *testing.T) {
	t.Helper()
	r := execute(t, x.auditor, "", "verify", "--db", "--wait", "0s", "--log-key", x.logPub, "--attest-key", x.attestPub)
	if r.code != exitOK {
		t.Fatalf("verify --db of an untouched ledger: %+v", r)
	}
}

func TestTamperForgeAnOutputInTheReadModel(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	x.verifyDBOK(t)
	id := x.ids[1]
	// No trigger stands in the way: the read model is not the log.
	if _, err := x.db.Pool.Exec(context.Background(),
		`UPDATE ledger.request_status SET output = '{"text":"forged output"}' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	f := x.verifyDBFault(t, bundle.ReadModelDiffers)
	if f.Stream != "request:"+id.String() || !strings.Contains(f.Message, "output") {
		t.Errorf("fault %+v does not name request %s's output", f, id)
	}
}

func TestTamperForgeAnOutcome(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	if _, err := x.db.Pool.Exec(context.Background(), `UPDATE ledger.request_status
SET state = 'succeeded', error_kind = NULL, error = NULL, output = '{"text":"no"}' WHERE id = $1`, x.denied); err != nil {
		t.Fatal(err)
	}
	f := x.verifyDBFault(t, bundle.ReadModelDiffers)
	if f.Stream != "request:"+x.denied.String() || !strings.Contains(f.Message, "state succeeded") || !strings.Contains(f.Message, "denied") {
		t.Errorf("fault %+v does not name request %s's forged state", f, x.denied)
	}
}

func TestTamperChangeTheAuditTrail(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	if _, err := x.db.Pool.Exec(context.Background(),
		`UPDATE ledger.audit_trail SET decision = 'allow', error_kind = NULL WHERE request_id = $1 AND kind = 'decision'`, x.denied); err != nil {
		t.Fatal(err)
	}
	f := x.verifyDBFault(t, bundle.ReadModelDiffers)
	if !strings.Contains(f.Message, "audit_trail") {
		t.Errorf("fault %+v does not name the audit trail", f)
	}
}

func TestTamperInsertAnEventBehindTheSealer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := sealedLedger(t, false)
	x.db.ForgesEvents()
	id := x.ids[0]
	stream := "request:" + id.String()
	sealed := x.event(t, id, "tool.requested")
	var head int64
	if err := x.db.Pool.QueryRow(ctx, `SELECT max(version) FROM ledger.events WHERE stream = $1`, stream).Scan(&head); err != nil {
		t.Fatal(err)
	}
	// An approval granted, in the request's own stream, at the sealed
	// tool.requested's transaction and position: behind the sealer's
	// cursor, sharing a leaf's position. A plain INSERT; no trigger is
	// disabled.
	if _, err := x.db.Pool.Exec(ctx, `INSERT INTO ledger.events (position, tx_id, stream, version, type, payload, metadata)
OVERRIDING SYSTEM VALUE VALUES ($1, $2::text::xid8, $3, $4, 'approval.granted', '{"approver":"mallory"}', '{"actor":"mallory"}')`,
		sealed.Position, fmt.Sprint(sealed.TxID-1), stream, head+1); err != nil {
		t.Fatal(err)
	}

	// verify --db names it.
	f := x.verifyDBFault(t, bundle.UnsealedEvent)
	if f.Stream != stream || f.Version != head+1 || !strings.Contains(f.Message, "approval.granted") {
		t.Errorf("fault %+v does not name the forged event (%s version %d)", f, stream, head+1)
	}

	// requests show leaves it out of the record, and names it.
	r := execute(t, x.auditor, "", "requests", "show", id.String(), "--json")
	if r.code != exitOK {
		t.Fatalf("requests show: %+v", r)
	}
	var d struct {
		Events   []readmodel.TrailEvent `json:"events"`
		Unsealed []readmodel.Unsealed   `json:"unsealed_events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Events {
		if e.Type == "approval.granted" || e.Version == head+1 {
			t.Errorf("requests show presents the forged event as part of the record: %+v", e)
		}
		if e.Leaf == nil {
			t.Errorf("requests show: sealed event %d has no leaf", e.Version)
		}
	}
	if len(d.Unsealed) != 1 || d.Unsealed[0].Version != head+1 || d.Unsealed[0].Reason != ledger.ReasonBehindSealer {
		t.Errorf("requests show names %+v as unsealed, want version %d behind the sealer", d.Unsealed, head+1)
	}
	r = execute(t, x.auditor, "", "requests", "show", id.String())
	if r.code != exitOK || !strings.Contains(r.stdout, "WARNING: 1 event(s)") || !strings.Contains(r.stdout, "approval.granted") {
		t.Errorf("requests show does not warn of the forged event: %+v", r)
	}

	// export writes the sealed record, says what it left out, exits 3.
	out := t.TempDir() + "/ledger.bundle"
	r = execute(t, x.auditor, "", "export", "--out", out, "--wait", "0s")
	if r.code != exitNotOK || !strings.Contains(r.stderr, "unsealed_event") || !strings.Contains(r.stderr, stream+" version") {
		t.Errorf("export: %+v", r)
	}
	rep := verifyJSON(t, []string{"verify", out, "--json", "--log-key", x.logPub, "--attest-key", x.attestPub}, exitOK)
	if !rep.OK {
		t.Errorf("the exported sealed record does not verify: %+v", rep.Fault)
	}

	// No reader a projection or rebuild goes through delivers it.
	var n int
	if err := x.db.Pool.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM ledger.read_all('0', 0, 1000000) e WHERE e.type = 'approval.granted')
  + (SELECT count(*) FROM ledger.events_between('0', 0, pg_snapshot_xmin(pg_current_snapshot()), 9223372036854775807,
                                                ARRAY['approval.granted']))`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("read_all and events_between deliver the forged event %d times", n)
	}
	r = execute(t, x.auditor, "", "projector", "verify", "audit_trail")
	if r.code != exitOK {
		t.Errorf("projector verify audit_trail: a rebuild includes the forged event: %+v", r)
	}

	// A running sealer finds it: records it once, as a row and as a
	// sealed log.unsealed_event, and sets the gauge.
	x.auditWithSealer(t, 1)
	var recorded, logged int
	if err := x.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger.log_faults WHERE stream = $1 AND version = $2 AND reason = 'behind_sealer'),
       (SELECT count(*) FROM ledger.events WHERE stream = 'log' AND type = 'log.unsealed_event' AND payload ->> 'stream' = $1)`,
		stream, head+1).Scan(&recorded, &logged); err != nil {
		t.Fatal(err)
	}
	if recorded != 1 || logged != 1 {
		t.Errorf("the sealer recorded the forged event %d times in log_faults and %d in the log, want once each", recorded, logged)
	}
	x.auditWithSealer(t, 1)
	if err := x.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.log_faults`).Scan(&recorded); err != nil || recorded != 1 {
		t.Errorf("a second audit recorded it again: %d rows (%v)", recorded, err)
	}

	// An event that claims a transaction no one has had yet is no better.
	if _, err := x.db.Pool.Exec(ctx, `INSERT INTO ledger.events (tx_id, stream, version, type, payload)
VALUES ((pg_current_xact_id()::text::bigint + 1000000)::text::xid8, $1, $2, 'approval.granted', '{"approver":"mallory"}')`,
		"request:"+x.ids[2].String(), 100); err != nil {
		t.Fatal(err)
	}
	x.auditWithSealer(t, 2)
	found, err := ledger.UnsealedEvents(ctx, x.db.Pool, 10)
	if err != nil || len(found) != 2 || found[1].Reason != ledger.ReasonFutureTransaction {
		t.Errorf("unsealed events %+v (%v), want the second from a future transaction", found, err)
	}
}

// auditWithSealer runs a sealer until its audit has seen want unsealed
// events (the execledger_log_unsealed_events gauge). x's own sealer must
// be stopped: one sealer runs at a time.
func (x *transparency) auditWithSealer(t *testing.T, want float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s := ledger.NewSealer(ledger.SealerConfig{AuditInterval: 50 * time.Millisecond, Registerer: reg})
	eng, err := projector.New(x.execSQL.Pool, projector.Config{PollInterval: 20 * time.Millisecond}, projector.Sealer(s))
	if err != nil {
		t.Fatal(err)
	}
	stop := runUntilStopped(t, "sealer", eng.Run)
	defer stop()
	deadline := time.Now().Add(time.Minute)
	for {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "execledger_log_unsealed_events" && mf.GetMetric()[0].GetGauge().GetValue() == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sealer's gauge never said %v unsealed events", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An approval forged behind the sealer, while the request waits for one,
// lets nothing run: the executor goes by the queue, whose stream_version
// is the head of the record, not by what ledger.events holds. The forged
// row takes the version the request's next event needs, so nothing is
// written on top of it (the expiry's write fails and is retried) until
// an operator removes it; then the approval expires as it should have.
func TestTamperForgeAnApprovalBehindTheSealer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := startTransparency(t)
	id := x.submit(t, x.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"text": "wait"}})
	awaitState(t, x.alice, id, ledger.StateAwaitingApproval)
	// The approval may not expire before the forgery is in place, however
	// long the sealer takes on a loaded machine: it expires when the test
	// says so, below.
	if _, err := x.db.Pool.Exec(ctx, `UPDATE ledger.queue SET approval_expires_at = 'infinity' WHERE id = $1 AND state = 'awaiting_approval'`, id); err != nil {
		t.Fatal(err)
	}
	stream := "request:" + id.String()
	requested := x.eventOf(t, stream, "tool.requested")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var sealed bool
		if err := x.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger.log_leaves WHERE position = $1)`,
			requested.Position).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if sealed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tool.requested was not sealed within a minute")
		}
	}
	var head int64
	if err := x.db.Pool.QueryRow(ctx, `SELECT max(version) FROM ledger.events WHERE stream = $1`, stream).Scan(&head); err != nil {
		t.Fatal(err)
	}
	if _, err := x.db.Pool.Exec(ctx, `INSERT INTO ledger.events (position, tx_id, stream, version, type, payload, metadata)
OVERRIDING SYSTEM VALUE VALUES ($1, $2::text::xid8, $3, $4, 'approval.granted', '{"approver":"mallory"}', '{"actor":"mallory"}')`,
		requested.Position, fmt.Sprint(requested.TxID-1), stream, head+1); err != nil {
		t.Fatal(err)
	}
	// Past the approval timeout the request still waits: not run, not
	// approved, not ended on top of the forgery.
	if _, err := x.db.Pool.Exec(ctx, `UPDATE ledger.queue SET approval_expires_at = clock_timestamp() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var expired bool
	for deadline := time.Now().Add(time.Minute); !expired; time.Sleep(50 * time.Millisecond) {
		if err := x.db.Pool.QueryRow(ctx, `SELECT approval_expires_at < clock_timestamp() - interval '1 second' FROM ledger.queue WHERE id = $1`,
			id).Scan(&expired); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the approval did not expire within a minute")
		}
	}
	if r, err := x.alice.Get(ctx, id); err != nil || r.State != ledger.StateAwaitingApproval {
		t.Fatalf("with a forged approval.granted at its next version, the request is %+v (%v), want still awaiting_approval", r, err)
	}
	if _, err := x.db.Pool.Exec(ctx, `DELETE FROM ledger.events WHERE stream = $1 AND version = $2`, stream, head+1); err == nil {
		t.Fatal("the append-only trigger let the forged row be deleted")
	}
	// The operator, having recorded it (the sealer's audit does), removes it.
	x.stopSeal()
	x.auditWithSealer(t, 1)
	tx, err := x.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE ledger.events DISABLE TRIGGER events_no_delete`,
		fmt.Sprintf(`DELETE FROM ledger.events WHERE stream = '%s' AND version = %d`, stream, head+1),
		`ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_delete`} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	awaitFinal(t, x.alice, id)
	r, err := x.alice.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != ledger.StateDenied || r.ErrorKind == nil || *r.ErrorKind != "approval_denied" {
		t.Fatalf("request with a forged approval ended %s (%v), want denied approval_denied", r.State, r.ErrorKind)
	}
	var started int
	if err := x.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events WHERE stream = $1 AND (type = 'execution.started' OR type = 'request.decided' AND payload::jsonb ? 'execution')`,
		stream).Scan(&started); err != nil || started != 0 {
		t.Fatalf("the tool started %d times (%v) on a forged approval", started, err)
	}
	var decisions int
	if err := x.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.audit_trail WHERE request_id = $1 AND decision = 'approved'`,
		id).Scan(&decisions); err != nil || decisions != 0 {
		t.Fatalf("the audit trail shows %d approvals (%v)", decisions, err)
	}
}

// eventOf reads the event of type typ in stream.
func (x *transparency) eventOf(t *testing.T, stream, typ string) ledger.Event {
	t.Helper()
	evs, err := ledger.NewStore(x.db.Pool).ReadStream(context.Background(), stream, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == typ {
			return e
		}
	}
	t.Fatalf("%s has no %s", stream, typ)
	return ledger.Event{}
}
