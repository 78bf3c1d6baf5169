package projector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// TestAppliesEveryEventOnceAcrossRestarts stops an engine mid-way through
// the log, twice, and checks that the read model holds every consumed
// event exactly once, in delivery order, and that the checkpoint agrees.
// The engine runs as a login holding only ledger_executor.
func TestAppliesEveryEventOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []int64
	for i := range 40 {
		want = append(want, b.appendEvents(t, fmt.Sprintf("test:s%d", i%3), "test.counted", 3)...)
		b.appendEvents(t, "test:other", "test.ignored", 2) // moves the checkpoint only
	}
	last := b.appendEvents(t, "test:other", "test.ignored", 1)[0]

	cfg := fast
	cfg.BatchSize = 5
	for round := range 2 {
		_, stop := b.start(t, b.exec.Pool, cfg, counter("toy", "test.counted"))
		waitFor(t, "the engine to be under way", func() bool {
			return len(b.appliedPositions(t, "toy")) > 20*(round+1)
		})
		stop()
		// One statement, one snapshot: a step whose commit the server
		// completes just after stop returned (its context was cancelled
		// mid-commit) shows in both counts or in neither.
		var total, rows int64
		if err := b.db.Pool.QueryRow(context.Background(), `SELECT p.applied_total,
			(SELECT count(*) FROM public.toy_applied a WHERE a.projection = p.name)
			FROM ledger.projections p WHERE p.name = 'toy'`).Scan(&total, &rows); err != nil {
			t.Fatal(err)
		}
		if total != rows {
			t.Fatalf("round %d: checkpoint counts %d applied, the read model %d", round, total, rows)
		}
	}
	e, _ := b.start(t, b.exec.Pool, cfg, counter("toy", "test.counted"))
	waitFor(t, "the engine to catch up", caughtUp(t, e, "toy", last))
	if got := b.appliedPositions(t, "toy"); !equalPositions(got, want) {
		t.Fatalf("applied %v\nwant    %v", got, want)
	}
	if s := statusOf(t, e, "toy"); s.AppliedTotal != int64(len(want)) || s.State != "active" {
		t.Fatalf("status %+v, want %d applied, active", s, len(want))
	}
}

// TestApplyErrorStopsOnlyThatProjection feeds a projection an event whose
// payload it cannot parse: it stops there, failed, with the position in
// its error and a projection.failed event, while another projection goes
// on; after the cause is fixed, Retry resumes it from the same event.
func TestApplyErrorStopsOnlyThatProjection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var tolerant atomic.Bool
	picky := projector.Projection{Name: "picky", Apply: map[string]projector.ApplyFunc{
		"test.counted": func(ctx context.Context, tx pgx.Tx, ev ledger.Event) error {
			var p struct{ N int }
			if err := json.Unmarshal(ev.Payload, &p); err != nil && !tolerant.Load() {
				return fmt.Errorf("payload: %w", err)
			}
			return record("picky")(ctx, tx, ev)
		},
	}}
	before := b.appendEvents(t, "test:a", "test.counted", 4)
	bad, err := b.store.Append(context.Background(), "test:a", ledger.AnyVersion, ledger.NewEvent{Type: "test.counted", Payload: map[string]any{"n": "not a number"}})
	if err != nil {
		t.Fatal(err)
	}
	after := b.appendEvents(t, "test:a", "test.counted", 4)

	reg := prometheus.NewRegistry()
	cfg := fast
	cfg.Registerer = reg
	e, _ := b.start(t, b.exec.Pool, cfg, picky, counter("steady", "test.counted"))

	waitFor(t, "picky to fail", func() bool { return statusOf(t, e, "picky").State == "failed" })
	s := statusOf(t, e, "picky")
	wantErr := fmt.Sprintf("failed at position %d: test.counted: payload: ", bad[0].Position)
	if !strings.HasPrefix(s.LastError, wantErr) {
		t.Fatalf("last error %q, want it to start %q", s.LastError, wantErr)
	}
	if s.FailedAt == nil || s.FailedAt.Position != bad[0].Position || s.FailedType != "test.counted" {
		t.Fatalf("failed at %+v (%s), want position %d", s.FailedAt, s.FailedType, bad[0].Position)
	}
	if s.Checkpoint.Position != before[len(before)-1] {
		t.Fatalf("checkpoint %+v, want just before the failed event (position %d)", s.Checkpoint, before[len(before)-1])
	}
	if got := b.appliedPositions(t, "picky"); !equalPositions(got, before) {
		t.Fatalf("picky applied %v, want %v", got, before)
	}
	evs := b.projectionEvents(t, "picky")
	if len(evs) != 1 || evs[0]["@type"] != "projection.failed" || evs[0]["position"] != float64(bad[0].Position) ||
		evs[0]["event_type"] != "test.counted" || !strings.Contains(fmt.Sprint(evs[0]["error"]), "payload") {
		t.Fatalf("projection:picky events %v", evs)
	}

	all := append(append(append([]int64{}, before...), bad[0].Position), after...)
	waitFor(t, "steady to apply everything", func() bool { return equalPositions(b.appliedPositions(t, "steady"), all) })
	waitFor(t, "the failure in the metrics", func() bool {
		return gaugeOf(t, reg, "execledger_projection_failed", "picky") == 1 &&
			gaugeOf(t, reg, "execledger_projection_events_behind", "picky") >= float64(1+len(after))
	})
	if err := e.Retry(context.Background(), "steady", ""); !errors.Is(err, projector.ErrNotFailed) {
		t.Fatalf("Retry of an active projection: %v, want ErrNotFailed", err)
	}
	if err := e.Retry(context.Background(), "nosuch", ""); !errors.Is(err, projector.ErrUnknownProjection) {
		t.Fatalf("Retry of an unknown projection: %v, want ErrUnknownProjection", err)
	}

	tolerant.Store(true) // the fix
	if err := e.Retry(context.Background(), "picky", "parser fixed"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "picky to apply everything", func() bool { return equalPositions(b.appliedPositions(t, "picky"), all) })
	if s := statusOf(t, e, "picky"); s.State != "active" || s.LastError != "" || s.FailedAt != nil {
		t.Fatalf("after retry: %+v", s)
	}
	evs = b.projectionEvents(t, "picky")
	if len(evs) != 2 || evs[1]["@type"] != "projection.retried" || evs[1]["note"] != "parser fixed" {
		t.Fatalf("projection:picky events %v", evs)
	}
}

// TestPanicInApplyIsAFailure: a panicking apply function fails its
// projection, and the engine (and the test process) go on.
func TestPanicInApplyIsAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	boom := projector.Projection{Name: "boom", Apply: map[string]projector.ApplyFunc{
		"test.boom": func(context.Context, pgx.Tx, ledger.Event) error { panic("nil map somewhere") },
	}}
	b.appendEvents(t, "test:a", "test.counted", 2)
	at := b.appendEvents(t, "test:a", "test.boom", 1)[0]
	e, _ := b.start(t, b.exec.Pool, fast, boom, counter("steady", "test.counted"))
	waitFor(t, "boom to fail", func() bool { return statusOf(t, e, "boom").State == "failed" })
	if s := statusOf(t, e, "boom"); s.LastError != fmt.Sprintf("failed at position %d: test.boom: panic: nil map somewhere", at) {
		t.Fatalf("last error %q", s.LastError)
	}
	more := b.appendEvents(t, "test:a", "test.counted", 1)[0]
	waitFor(t, "steady to go on", func() bool {
		got := b.appliedPositions(t, "steady")
		return len(got) == 3 && got[2] == more
	})
}

// TestDroppedTableFailsTheProjection: a read model's table dropped by hand
// is an apply error, so a failed status and event, not a skip.
func TestDroppedTableFailsTheProjection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mustExec(t, b.db.Pool, `CREATE TABLE public.toy_counts (type text PRIMARY KEY, n bigint NOT NULL)`)
	mustExec(t, b.db.Pool, `GRANT SELECT, INSERT, UPDATE ON public.toy_counts TO ledger_executor`)
	counts := projector.Projection{Name: "counts", Apply: map[string]projector.ApplyFunc{
		"test.counted": func(ctx context.Context, tx pgx.Tx, ev ledger.Event) error {
			_, err := tx.Exec(ctx, `INSERT INTO public.toy_counts VALUES ($1, 1) ON CONFLICT (type) DO UPDATE SET n = toy_counts.n + 1`, ev.Type)
			return err
		},
	}}
	first := b.appendEvents(t, "test:a", "test.counted", 3)
	e, _ := b.start(t, b.exec.Pool, fast, counts)
	waitFor(t, "the first events", caughtUp(t, e, "counts", first[2]))
	mustExec(t, b.db.Pool, `DROP TABLE public.toy_counts`)
	next := b.appendEvents(t, "test:a", "test.counted", 1)[0]
	waitFor(t, "counts to fail", func() bool { return statusOf(t, e, "counts").State == "failed" })
	s := statusOf(t, e, "counts")
	if !strings.HasPrefix(s.LastError, fmt.Sprintf("failed at position %d: ", next)) || !strings.Contains(s.LastError, "does not exist") {
		t.Fatalf("last error %q", s.LastError)
	}
	if s.Checkpoint.Position != first[2] {
		t.Fatalf("checkpoint %+v moved past the failed event", s.Checkpoint)
	}
}

// TestCheckpointAheadOfTheLogFails: a checkpoint that names no event of
// the log (here: beyond its end, as after restoring an older backup) stops
// the projection with a message saying so, instead of waiting silently.
func TestCheckpointAheadOfTheLogFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, "test:a", "test.counted", 2)
	mustExec(t, b.db.Pool, `INSERT INTO ledger.projections (name, tx_id, position) VALUES ('toy', '4000000000', 999999)`)
	e, _ := b.start(t, b.exec.Pool, fast, counter("toy", "test.counted"))
	waitFor(t, "toy to fail", func() bool { return statusOf(t, e, "toy").State == "failed" })
	s := statusOf(t, e, "toy")
	if !strings.HasPrefix(s.LastError, "failed at position 999999: checkpoint (tx_id 4000000000, position 999999) is ahead of the log") {
		t.Fatalf("last error %q", s.LastError)
	}
	if got := b.appliedPositions(t, "toy"); len(got) != 0 {
		t.Fatalf("applied %v from a bad checkpoint", got)
	}
	evs := b.projectionEvents(t, "toy")
	if len(evs) != 1 || evs[0]["@type"] != "projection.failed" || evs[0]["event_type"] != nil {
		t.Fatalf("projection:toy events %v", evs)
	}
}

// TestLateCommitIsApplied: an event whose transaction began first but
// commits after a later one is still applied, in delivery order, although
// the engine polled while it was uncommitted.
func TestLateCommitIsApplied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	marker := b.appendEvents(t, "test:marker", "test.counted", 1)[0]
	slow, err := b.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	slowAt, err := b.store.AppendBatch(ctx, slow, []ledger.StreamAppend{{Stream: "test:slow", Events: []ledger.NewEvent{{Type: "test.counted", Payload: map[string]any{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	fastAt := b.appendEvents(t, "test:fast", "test.counted", 1)[0]

	e, _ := b.start(t, b.exec.Pool, fast, counter("toy", "test.counted"))
	waitFor(t, "the marker", caughtUp(t, e, "toy", marker))
	time.Sleep(10 * fast.PollInterval) // the engine polls while slow is open
	if got := b.appliedPositions(t, "toy"); !equalPositions(got, []int64{marker}) {
		t.Fatalf("applied %v while the slow writer was open, want only the marker", got)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := []int64{marker, slowAt[0].Position, fastAt}
	waitFor(t, "slow and fast", func() bool { return len(b.appliedPositions(t, "toy")) >= 3 })
	if got := b.appliedPositions(t, "toy"); !equalPositions(got, want) {
		t.Fatalf("applied %v, want %v", got, want)
	}
}

// TestExecutorCannotWriteCheckpoints: the engine's login moves checkpoints
// only through the ledger's functions, never by UPDATE, and an advance from
// a checkpoint that moved meanwhile is refused.
func TestExecutorCannotWriteCheckpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, "test:a", "test.counted", 1)
	if _, err := b.exec.Pool.Exec(ctx, `SELECT ledger.projection_register('toy')`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.exec.Pool.Exec(ctx, `UPDATE ledger.projections SET position = 5`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("UPDATE as executor: %v, want permission denied", err)
	}
	_, err := b.exec.Pool.Exec(ctx, `SELECT ledger.projection_advance('toy', '7', 1, '8', 1, 0)`)
	if err == nil || !strings.Contains(err.Error(), "is not active at") {
		t.Fatalf("advance from a stale checkpoint: %v", err)
	}
	if _, err := b.exec.Pool.Exec(ctx, `SELECT ledger.append_events(ARRAY['projection:toy'], ARRAY[1::bigint], ARRAY['projection.failed'], ARRAY['{}'], ARRAY['{}'])`); err == nil {
		t.Fatal("an executor appended to a projection: stream directly")
	}
}

// TestMetricsReportCheckpointAndLag: the checkpoint gauge follows the
// last event passed, and the lag gauges read zero once caught up.
func TestMetricsReportCheckpointAndLag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := prometheus.NewRegistry()
	cfg := fast
	cfg.Registerer = reg
	positions := b.appendEvents(t, "test:a", "test.counted", 10)
	last := b.appendEvents(t, "test:a", "test.ignored", 1)[0]
	e, _ := b.start(t, b.exec.Pool, cfg, counter("toy", "test.counted"))
	waitFor(t, "catching up", caughtUp(t, e, "toy", last))
	waitFor(t, "the gauges", func() bool {
		return gaugeOf(t, reg, "execledger_projection_checkpoint_position", "toy") == float64(last) &&
			gaugeOf(t, reg, "execledger_projection_events_behind", "toy") == 0 &&
			gaugeOf(t, reg, "execledger_projection_seconds_behind", "toy") == 0
	})
	if got := gaugeOf(t, reg, "execledger_projection_applied_events_total", "toy"); got != float64(len(positions)) {
		t.Fatalf("applied counter %v, want %d", got, len(positions))
	}
	if got := gaugeOf(t, reg, "execledger_projection_failed", "toy"); got != 0 {
		t.Fatalf("failed gauge %v", got)
	}
}
