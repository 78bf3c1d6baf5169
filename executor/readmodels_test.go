package executor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// TestReadModelsRebuiltEqualLive runs mixed load through a real executor
// (allowed calls, denials by every stage, approvals granted, denied and
// expired, cancellations before and while running, a timeout, rescue of
// claims whose executor vanished) and then shows that every read model
// rebuilt from the log is identical, row for row, to the live one: the
// inline ones (requests, runs) as their writers left them, the
// asynchronous ones (audit trail, quota usage) as the engine left them.
// It then rebuilds each through shadow tables and checks that nothing
// changed. Background processes are covered by processrun's tests.
func TestReadModelsRebuiltEqualLive(t *testing.T) {
	t.Parallel()
	unsafe := &flaky{}
	e := setup(t, func(c *Config) {
		c.Sensitive = []string{"test.unsafe"}
		// Long enough that no approval expires before the test decides it,
		// however loaded the machine; the one meant to expire is made to.
		c.ApprovalTimeout = 10 * time.Minute
		c.ToolTimeout = 700 * time.Millisecond
	}, unsafe)
	ctx := context.Background()
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := e.aliceSQL.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var ids []uuid.UUID // alice's requests
	add := func(c *ledger.Client, p ledger.SubmitParams) uuid.UUID {
		id := submit(t, c, p)
		if c == e.alice {
			ids = append(ids, id)
		}
		return id
	}

	// Allowed, and denied by each stage: support, policy, input, budget,
	// an ended run.
	mustExec("SELECT ledger.set_run_budget('r1', 2)")
	for i := range 3 {
		add(e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": strings.Repeat("a", i+1)}, RunID: "r1"})
	}
	add(e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "no run"}})
	bobs := add(e.bob, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	await(t, e.bob, bobs)
	add(e.alice, ledger.SubmitParams{Tool: "no.such", Input: map[string]any{}})
	add(e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x", "extra": 1}})
	mustExec("SELECT ledger.end_run('r-ended', 'done')")
	add(e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "late"}, RunID: "r-ended"})
	// A timeout.
	add(e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 5000}, RunID: "r2"})
	for _, id := range ids {
		await(t, e.alice, id)
	}

	// Approvals: granted, denied, expired; a cancel while awaiting.
	granted := add(e.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 1}})
	denied := add(e.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 2}})
	expired := add(e.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 3}})
	awaitingCancel := add(e.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 4}})
	for _, id := range []uuid.UUID{granted, denied, expired, awaitingCancel} {
		waitState(t, e.alice, id, ledger.StateAwaitingApproval)
	}
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1, 'fine')", granted); err != nil {
		t.Fatal(err)
	}
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.deny_approval($1, 'no')", denied); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.alice.Cancel(ctx, awaitingCancel, "changed my mind"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := e.db.Pool.Exec(ctx, "UPDATE ledger.queue SET approval_expires_at = clock_timestamp() WHERE id = $1", expired); err != nil {
		t.Fatal(err)
	}
	// A cancel while running.
	running := add(e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 600}, RunID: "r2"})
	waitState(t, e.alice, running, ledger.StateRunning)
	if ok, err := e.alice.Cancel(ctx, running, "stop"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, id := range ids {
		await(t, e.alice, id)
	}

	// Rescue: claims of an executor that vanished, before and after the
	// call began.
	e.stop()
	for _, started := range []bool{false, true} {
		id := add(e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "rescued"}})
		if got := claimAsGhost(t, e, started); got != id {
			t.Fatalf("ghost claimed %s, not %s", got, id)
		}
	}
	unsafeStarted := add(e.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 5}})
	if got := claimAsGhost(t, e, true); got != unsafeStarted {
		t.Fatalf("ghost claimed %s, not %s", got, unsafeStarted)
	}
	x, err := New(e.execSQL.Pool, Config{Label: "rescuer", RescueInterval: 50 * time.Millisecond, PollInterval: 100 * time.Millisecond,
		Sensitive: []string{"test.unsafe"}, ApprovalTimeout: 1500 * time.Millisecond},
		e.policy, e.signer, slog.New(slog.DiscardHandler), Echo{}, Sleep{}, unsafe)
	if err != nil {
		t.Fatal(err)
	}
	stopRescuer := e.start(t, x)
	for _, id := range ids {
		waitAttested(t, e, id)
	}
	// Nothing writes to the log from here on but the rebuilds' own
	// projection.* events, which no read model consumes: the digests
	// before and after the rebuilds must be equal.
	stopRescuer()

	// The engine brings the asynchronous read models up to the log's last
	// event (waiting on "events behind" alone is not enough: read_all
	// holds back what other tests' open transactions might precede).
	var last int64
	if err := e.db.Pool.QueryRow(ctx, `SELECT position FROM ledger.events ORDER BY tx_id DESC, position DESC LIMIT 1`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	eng, err := projector.New(e.execSQL.Pool, projector.Config{PollInterval: 20 * time.Millisecond}, projector.ReadModels()...)
	if err != nil {
		t.Fatal(err)
	}
	engCtx, stopEngine := context.WithCancel(ctx)
	engDone := make(chan error, 1)
	go func() { engDone <- eng.Run(engCtx) }()
	deadline := time.Now().Add(waitLong)
	for {
		st, err := eng.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		behind := false
		for _, s := range st {
			if s.State != "active" {
				t.Fatalf("projection %s: %s", s.Name, s.LastError)
			}
			if s.Mode == "async" && s.Checkpoint.Position != last {
				behind = true
			}
		}
		if !behind {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not catch up: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopEngine()
	<-engDone

	verifyAll := func(when string) map[string]string {
		t.Helper()
		checks, err := projector.Verify(ctx, e.db.Pool, "requests", "runs", "audit_trail", "quota_usage")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		digests := map[string]string{}
		for _, c := range checks {
			if !c.OK() {
				t.Errorf("%s: %s.%s differs from its rebuild (%d live rows, %d rebuilt): %s",
					when, c.Projection, c.Table, c.LiveRows, c.RebuiltRows, c.FirstDifference)
			}
			digests[c.Table] = c.LiveDigest
		}
		return digests
	}
	before := verifyAll("after load")

	// The read models say what happened.
	var outcomes, attested, decisions int
	if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'outcome'),
       count(*) FILTER (WHERE kind = 'outcome' AND attestation_digest IS NOT NULL),
       count(*) FILTER (WHERE kind = 'decision') FROM ledger.audit_trail`).Scan(&outcomes, &attested, &decisions); err != nil {
		t.Fatal(err)
	}
	if outcomes != len(ids)+1 || attested != len(ids)+1 || decisions < len(ids)+1 {
		t.Errorf("audit trail: %d outcomes (%d attested), %d decisions for %d requests", outcomes, attested, decisions, len(ids)+1)
	}
	var used, limit int
	if err := e.db.Pool.QueryRow(ctx, `SELECT budget_used, budget_limit FROM ledger.quota_usage_runs
WHERE principal = 'alice' AND run_id = 'r1'`).Scan(&used, &limit); err != nil || used != 2 || limit != 2 {
		t.Errorf("quota of run r1: used %d of %d, %v", used, limit, err)
	}
	var exhausted int
	if err := e.db.Pool.QueryRow(ctx, `SELECT denied FROM ledger.quota_denials
WHERE principal = 'alice' AND run_id = 'r1' AND reason = 'budget_exhausted'`).Scan(&exhausted); err != nil || exhausted != 1 {
		t.Errorf("budget denials of run r1: %d, %v", exhausted, err)
	}

	// Every kind of ending the load meant to produce is there.
	var kinds string
	if err := e.db.Pool.QueryRow(ctx, `SELECT string_agg(DISTINCT state || '/' || coalesce(error_kind, ''), ' ' ORDER BY state || '/' || coalesce(error_kind, ''))
FROM ledger.request_status`).Scan(&kinds); err != nil {
		t.Fatal(err)
	}
	const want = "cancelled/cancelled denied/approval_denied denied/budget_exhausted denied/invalid_input denied/policy_denied " +
		"failed/outcome_unknown failed/timed_out succeeded/"
	if kinds != want {
		t.Errorf("outcomes:\n got %s\nwant %s", kinds, want)
	}

	// A row changed behind the projection's back is found and named, and a
	// rebuild puts it right.
	if _, err := e.db.Pool.Exec(ctx, "UPDATE ledger.request_status SET error = 'tampered' WHERE id = $1", granted); err != nil {
		t.Fatal(err)
	}
	checks, err := projector.Verify(ctx, e.db.Pool, "requests")
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 1 || checks[0].OK() || !strings.Contains(checks[0].FirstDifference, granted.String()) ||
		!strings.Contains(checks[0].FirstDifference, "tampered") {
		t.Errorf("verify after tampering: %+v", checks)
	}

	// Rebuilding through shadow tables repairs it and changes nothing else.
	for _, name := range []string{"requests", "runs", "audit_trail", "quota_usage"} {
		var last projector.Progress
		if err := projector.Rebuild(ctx, e.db.Pool, name, 7, func(p projector.Progress) { last = p }); err != nil {
			t.Fatalf("rebuild %s: %v", name, err)
		}
		if !last.Swapped {
			t.Errorf("rebuild %s: no swap reported: %+v", name, last)
		}
	}
	after := verifyAll("after rebuild")
	for table, d := range before {
		if after[table] != d {
			t.Errorf("%s changed in the rebuild: %s, then %s", table, d, after[table])
		}
	}
}
