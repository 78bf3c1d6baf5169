package projector_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// appendOne appends one event as the superuser (who may write any stream)
// and returns its position.
func (b bundle) appendOne(t *testing.T, stream, typ string, payload map[string]any) int64 {
	t.Helper()
	at, err := b.store.Append(context.Background(), stream, ledger.AnyVersion,
		ledger.NewEvent{Type: typ, Payload: payload, Metadata: ledger.Metadata{Actor: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	return at[0].Position
}

// request appends a tool.requested for principal and returns its stream.
func (b bundle) request(t *testing.T, id, principal string) string {
	t.Helper()
	stream := "request:" + id
	b.appendOne(t, stream, "tool.requested", map[string]any{"request_id": id, "principal": principal, "tool": "echo",
		"input": map[string]any{}, "input_digest": "sha256:00"})
	return stream
}

// TestReadModelFailsAtTheEventItCannotApply: an event a SQL projection
// cannot apply (skill.approved of a skill never installed; a payload whose
// number is not one) stops that projection at exactly that event, with
// its status, last error and a projection.failed event, while the other
// projections go on past it; after a repair, retry resumes it.
func TestReadModelFailsAtTheEventItCannotApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendOne(t, "skill:acme.ok", "skill.installed", map[string]any{"version": "1.0.0", "publisher": "acme"})
	for i := range 5 {
		b.request(t, fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", i), "p1")
	}
	badSkill := b.appendOne(t, "skill:acme.ghost", "skill.approved", map[string]any{"approver": "x"})
	unknown := b.appendOne(t, "skill:acme.ok", "skill.frobnicated", map[string]any{})
	stream := b.request(t, "00000000-0000-0000-0000-0000000000aa", "p2")
	badQuota := b.appendOne(t, stream, "execution.finished", map[string]any{"state": "succeeded", "resources": map[string]any{"fuel_used": "lots"}})
	last := b.appendOne(t, "skill:acme.ok", "skill.enabled", map[string]any{})

	e, _ := b.start(t, b.exec.Pool, fast, projector.ReadModels()...)
	waitFor(t, "skill_status and quota_usage to fail, audit_trail to pass them", func() bool {
		return statusOf(t, e, "skill_status").State == "failed" && statusOf(t, e, "quota_usage").State == "failed" &&
			passed(t, e, "audit_trail", last)()
	})
	for _, tc := range []struct {
		name string
		at   int64
		typ  string
		says string
	}{
		{"skill_status", badSkill, "skill.approved", "skill.approved on skill acme.ghost before skill.installed"},
		{"quota_usage", badQuota, "execution.finished", "invalid input syntax for type bigint"},
	} {
		s := statusOf(t, e, tc.name)
		want := fmt.Sprintf("failed at position %d: %s: ", tc.at, tc.typ)
		if s.FailedAt == nil || s.FailedAt.Position != tc.at || s.FailedType != tc.typ ||
			!strings.HasPrefix(s.LastError, want) || !strings.Contains(s.LastError, tc.says) {
			t.Errorf("%s: %+v, want failure at %d (%s) saying %q", tc.name, s, tc.at, tc.typ, tc.says)
		}
		if s.Checkpoint.Position >= tc.at {
			t.Errorf("%s: checkpoint %d passed the failed event %d", tc.name, s.Checkpoint.Position, tc.at)
		}
		evs := b.projectionEvents(t, tc.name)
		if len(evs) != 1 || evs[0]["@type"] != "projection.failed" || evs[0]["position"] != float64(tc.at) {
			t.Errorf("%s: events %v", tc.name, evs)
		}
	}
	// Everything before the failed event was applied.
	var status string
	if err := b.db.Pool.QueryRow(ctx, `SELECT status FROM ledger.skill_status WHERE skill_id = 'acme.ok'`).Scan(&status); err != nil || status != "installed" {
		t.Errorf("acme.ok: %q, %v", status, err)
	}

	// A repair (the missing install) and a retry: skill_status resumes at
	// the event, and stops again at the next one it cannot apply, an
	// unknown type on its own streams.
	mustExec(t, b.db.Pool, `INSERT INTO ledger.skill_status (skill_id, status, stream_version, updated_at) VALUES ('acme.ghost', 'quarantined', 0, now())`)
	if err := e.Retry(ctx, "skill_status", "ghost installed by hand"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "skill_status to fail at the unknown type", func() bool {
		s := statusOf(t, e, "skill_status")
		return s.State == "failed" && s.FailedAt != nil && s.FailedAt.Position == unknown
	})
	if s := statusOf(t, e, "skill_status"); !strings.Contains(s.LastError, "unknown event type skill.frobnicated on a skill stream") {
		t.Errorf("skill_status at the unknown type: %+v", s)
	}
	// Repaired by a projection that knows it: here, by moving past it as an
	// operator would after a fix (the checkpoint to the event), then retry.
	mustExec(t, b.db.Pool, `UPDATE ledger.projections SET tx_id = (SELECT tx_id FROM ledger.events WHERE position = $1), position = $1 WHERE name = 'skill_status'`, unknown)
	if err := e.Retry(ctx, "skill_status", "skipped by hand"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "skill_status to catch up", passed(t, e, "skill_status", last))
	if err := b.db.Pool.QueryRow(ctx, `SELECT status FROM ledger.skill_status WHERE skill_id = 'acme.ok'`).Scan(&status); err != nil || status != "enabled" {
		t.Errorf("acme.ok after retry: %q, %v", status, err)
	}
	if s := statusOf(t, e, "quota_usage"); s.State != "failed" {
		t.Errorf("quota_usage recovered without a retry: %+v", s)
	}
}

// TestReadModelTableDroppedByHand: a projection whose table is gone fails
// with the database's own words, serve's engine keeps running, and once
// the table is back a retry resumes and the model verifies against the
// log.
func TestReadModelTableDroppedByHand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.request(t, "00000000-0000-0000-0000-000000000001", "p1")
	cfg := fast
	cfg.Logger = testLogger(t)
	e, _ := b.start(t, b.exec.Pool, cfg, projector.ReadModels()...)
	first := b.appendOne(t, "policy", "policy.published", map[string]any{})
	waitFor(t, "quota_usage to catch up", caughtUp(t, e, "quota_usage", first))

	mustExec(t, b.db.Pool, `ALTER TABLE ledger.quota_usage_buckets RENAME TO quota_usage_buckets_away`)
	stream := b.request(t, "00000000-0000-0000-0000-000000000002", "p1")
	at := b.appendOne(t, stream, "policy.decided", map[string]any{"decision": "allow", "stage": "allow"})
	waitFor(t, "quota_usage to fail", func() bool { return statusOf(t, e, "quota_usage").State == "failed" })
	s := statusOf(t, e, "quota_usage")
	if !strings.Contains(s.LastError, `relation "quota_usage_buckets" does not exist`) || s.FailedAt == nil || s.FailedAt.Position >= at+1 {
		t.Errorf("quota_usage with its table gone: %+v", s)
	}

	mustExec(t, b.db.Pool, `ALTER TABLE ledger.quota_usage_buckets_away RENAME TO quota_usage_buckets`)
	if err := e.Retry(ctx, "quota_usage", ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "quota_usage to catch up", passed(t, e, "quota_usage", at))
	checks, err := projector.Verify(ctx, b.db.Pool, "quota_usage")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK() {
			t.Errorf("%s: %s", c.Table, c.FirstDifference)
		}
	}
	var allowed int
	if err := b.db.Pool.QueryRow(ctx, `SELECT calls_allowed FROM ledger.quota_usage WHERE principal = 'p1'`).Scan(&allowed); err != nil || allowed != 1 {
		t.Errorf("p1 allowed %d, %v", allowed, err)
	}
}

// passed: projection name has applied the event at pos and is not behind
// (the projection.* events a failure and a retry append come after it).
func passed(t *testing.T, e *projector.Engine, name string, pos int64) func() bool {
	return func() bool {
		s := statusOf(t, e, name)
		return s.Checkpoint.Position >= pos && s.EventsBehind == 0
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, nil))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// TestReadModelCheckpointsMoveOnlyByApplying: an executor login cannot move
// the checkpoint of one of the ledger's read models past events without
// applying them (projection_advance is for Go projections); only
// projection_step, which applies what it passes, moves it.
func TestReadModelCheckpointsMoveOnlyByApplying(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.request(t, "00000000-0000-0000-0000-000000000001", "p1")
	last := b.appendOne(t, "policy", "policy.published", map[string]any{})
	var tx string
	if err := b.db.Pool.QueryRow(ctx, `SELECT tx_id::text FROM ledger.events WHERE position = $1`, last).Scan(&tx); err != nil {
		t.Fatal(err)
	}
	_, err := b.exec.Pool.Exec(ctx, `SELECT ledger.projection_advance('audit_trail', '0', 0, $1::xid8, $2, 0)`, tx, last)
	if err == nil || !strings.Contains(err.Error(), "projection_step moves it") {
		t.Fatalf("an executor login skipped the audit trail's events: %v", err)
	}
	// Steps until the checkpoint reaches the last event: what read_all
	// may deliver waits for every older transaction of the cluster, other
	// tests' included.
	fromTx, from := "0", int64(0)
	waitFor(t, "projection_step to reach the last event", func() bool {
		err := b.exec.Pool.QueryRow(ctx, `SELECT tx_id, "position" FROM ledger.projection_step('quota_usage', $1::xid8, $2, 100)`,
			fromTx, from).Scan(&fromTx, &from)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatalf("projection_step: %v", err)
		}
		return from == last
	})
	var calls int
	if err := b.db.Pool.QueryRow(ctx, `SELECT calls_requested FROM ledger.quota_usage WHERE principal = 'p1'`).Scan(&calls); err != nil || calls != 1 {
		t.Fatalf("quota after the step: %d, %v", calls, err)
	}
}

// TestRebuildWhileTheEngineRuns: an asynchronous read model rebuilt while
// its runner keeps applying new events swaps in without losing or
// doubling any: once writes stop and the runner catches up, it verifies
// against the log.
func TestRebuildWhileTheEngineRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const seeded = 1000
	mustExec(t, b.db.Pool, `INSERT INTO ledger.events (stream, version, type, payload, metadata)
SELECT 'request:' || id, v, type, payload, '{"actor": "test"}'
FROM (SELECT gen_random_uuid() AS id, i FROM generate_series(1, $1) i) r
CROSS JOIN LATERAL (VALUES
    (1, 'tool.requested', json_build_object('request_id', r.id, 'principal', 'p' || (r.i % 7), 'tool', 'echo', 'input_digest', 'sha256:00')),
    (2, 'policy.decided', json_build_object('decision', 'allow', 'stage', 'allow', 'reason_code', 'policy.permit'))) e(v, type, payload)
ORDER BY r.i, e.v`, seeded)
	e, _ := b.start(t, b.exec.Pool, fast, projector.ReadModels()...)

	// A writer appends denied requests the whole time the rebuilds run.
	stop := make(chan struct{})
	type result struct {
		n   int
		err error
	}
	written := make(chan result)
	go func() {
		var r result
		defer func() { written <- r }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, r.err = b.db.Pool.Exec(ctx, `INSERT INTO ledger.events (stream, version, type, payload, metadata)
SELECT 'request:' || x.id, e.v, e.type, e.payload, '{"actor": "test"}'
FROM (SELECT gen_random_uuid() AS id) x
CROSS JOIN LATERAL (VALUES
    (1, 'tool.requested', json_build_object('request_id', x.id, 'principal', 'p' || ($1::int % 7), 'tool', 'echo', 'input_digest', 'sha256:00')),
    (2, 'policy.decided', json_build_object('decision', 'deny', 'stage', 'policy', 'error_kind', 'policy_denied', 'message', 'no'))) e(v, type, payload)`,
				r.n)
			if r.err != nil {
				return
			}
			r.n++
		}
	}()
	for _, name := range []string{"audit_trail", "quota_usage"} {
		if err := projector.Rebuild(ctx, b.db.Pool, name, 20, nil); err != nil {
			t.Fatalf("rebuild %s: %v", name, err)
		}
	}
	close(stop)
	w := <-written
	if w.err != nil || w.n == 0 {
		t.Fatalf("the writer wrote %d requests during the rebuilds: %v", w.n, w.err)
	}
	n := w.n
	var last int64
	if err := b.db.Pool.QueryRow(ctx, `SELECT position FROM ledger.events ORDER BY tx_id DESC, position DESC LIMIT 1`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the runners to reach the last event", func() bool {
		return statusOf(t, e, "audit_trail").Checkpoint.Position == last && statusOf(t, e, "quota_usage").Checkpoint.Position == last
	})
	checks, err := projector.Verify(ctx, b.db.Pool, "audit_trail", "quota_usage")
	if err != nil {
		t.Fatal(err)
	}
	compared := false
	for _, c := range checks {
		if !c.OK() {
			t.Errorf("%s after a rebuild under load: %s", c.Table, c.FirstDifference)
		}
		compared = compared || c.Table == "quota_denial_buckets"
	}
	if !compared {
		t.Errorf("the rebuild did not compare quota_denial_buckets: %+v", checks)
	}
	var decisions, denied int
	if err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'decision'), count(*) FILTER (WHERE decision = 'deny' AND kind = 'decision')
FROM ledger.audit_trail`).Scan(&decisions, &denied); err != nil || decisions != seeded+n || denied != n {
		t.Errorf("audit trail: %d decisions (%d denials), want %d (%d): %v", decisions, denied, seeded+n, n, err)
	}
}

// TestSubmittersSeeTheirOwnAndWriteNothing: a submitter login reads only
// its own principal's audit and quota rows, and can call none of the
// functions that apply, move, rebuild or verify a read model.
func TestSubmittersSeeTheirOwnAndWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice := b.db.LoginRole(t, "alice", "ledger_submitter")
	for i, p := range []string{"alice", "bob"} {
		stream := b.request(t, fmt.Sprintf("00000000-0000-0000-0003-%012d", i), p)
		b.appendOne(t, stream, "policy.decided", map[string]any{"decision": "deny", "stage": "policy", "error_kind": "policy_denied"})
	}
	e, _ := b.start(t, b.exec.Pool, fast, projector.ReadModels()...)
	var last int64
	if err := b.db.Pool.QueryRow(ctx, `SELECT position FROM ledger.events ORDER BY tx_id DESC, position DESC LIMIT 1`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the audit trail and quota usage to apply the events", func() bool {
		return passed(t, e, "audit_trail", last)() && passed(t, e, "quota_usage", last)()
	})
	for _, table := range []string{"audit_trail", "quota_usage", "quota_denials", "quota_usage_buckets", "quota_denial_buckets"} {
		var principals string
		if err := alice.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(DISTINCT principal, ','), '') FROM ledger.`+table).Scan(&principals); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if principals != "alice" {
			t.Errorf("alice reads %s rows of %q", table, principals)
		}
	}
	for _, q := range []string{
		`SELECT ledger.apply_requests('0', 0, '0', 1)`,
		`SELECT ledger.apply_quota_usage('0', 0, '0', 1)`,
		`SELECT ledger.projection_apply('audit_trail', '0', 0, '0', 1)`,
		`SELECT * FROM ledger.projection_step('audit_trail', '0', 0, 10)`,
		`SELECT ledger.projection_advance('toy', '0', 0, '0', 1, 0)`,
		`SELECT ledger.projection_rebuild_begin('requests')`,
		`SELECT * FROM ledger.projection_rebuild_swap('requests')`,
		`SELECT * FROM ledger.projection_verify('requests')`,
		`SELECT ledger.projection_retry('audit_trail')`,
		`DELETE FROM ledger.audit_trail`,
		`UPDATE ledger.quota_usage SET calls_denied = 0`,
	} {
		if _, err := alice.Pool.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "42501") {
			t.Errorf("a submitter ran %s: %v", q, err)
		}
	}
}

// TestDenialsByReasonPerHour: quota_denial_buckets counts each denial
// under its reason (the policy's error kind, approval_denied) in the hour
// and the day it was recorded, per principal; allowed calls not at all.
func TestDenialsByReasonPerHour(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i, d := range []struct{ principal, typ, kind string }{
		{"alice", "policy.decided", "policy_denied"}, {"alice", "policy.decided", "policy_denied"},
		{"alice", "policy.decided", "budget_exhausted"}, {"alice", "approval.denied", ""},
		{"bob", "policy.decided", "policy_denied"}, {"bob", "policy.decided", ""},
	} {
		stream := b.request(t, fmt.Sprintf("00000000-0000-0000-0004-%012d", i), d.principal)
		switch {
		case d.typ == "approval.denied":
			b.appendOne(t, stream, d.typ, map[string]any{"approver": "carol"})
		case d.kind == "":
			b.appendOne(t, stream, d.typ, map[string]any{"decision": "allow", "stage": "allow"})
		default:
			b.appendOne(t, stream, d.typ, map[string]any{"decision": "deny", "stage": "policy", "error_kind": d.kind})
		}
	}
	e, _ := b.start(t, b.exec.Pool, fast, projector.ReadModels()...)
	var last int64
	if err := b.db.Pool.QueryRow(ctx, `SELECT position FROM ledger.events ORDER BY tx_id DESC, position DESC LIMIT 1`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "quota usage to apply the events", passed(t, e, "quota_usage", last))
	for _, bucket := range []string{"hour", "day"} {
		var got string
		// Summed over the buckets, which the events may straddle; each
		// bucket starts on its hour or day (UTC).
		var misaligned int
		if err := b.db.Pool.QueryRow(ctx, `SELECT string_agg(principal || ' ' || reason || ' ' || n, ', ' ORDER BY principal, reason),
       (SELECT count(*) FROM ledger.quota_denial_buckets WHERE bucket = $1 AND bucket_start <> date_trunc($1, bucket_start, 'UTC'))
FROM (SELECT principal, reason, sum(denied) AS n FROM ledger.quota_denial_buckets WHERE bucket = $1 GROUP BY 1, 2) x`, bucket).Scan(&got, &misaligned); err != nil {
			t.Fatal(err)
		}
		if misaligned != 0 {
			t.Errorf("%d %s buckets do not start on the %s", misaligned, bucket, bucket)
		}
		if want := "alice approval_denied 1, alice budget_exhausted 1, alice policy_denied 2, bob policy_denied 1"; got != want {
			t.Errorf("%s buckets: %q, want %q", bucket, got, want)
		}
	}
}
