package projector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/execledger/execledger/projector"
)

// readModelNames are the ledger's asynchronous read models.
var readModelNames = []string{"audit_trail", "quota_usage", "skill_status"}

// TestReadModelsStepTogether: the engine applies the ledger's read models
// in one pass over each batch: every batch moves all three checkpoints in
// one transaction (their rows carry one xmin), where NoGroup moves each in
// its own; and the read models it builds are what a rebuild from the log
// builds, both ways.
func TestReadModelsStepTogether(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		noGroup bool
		txs     int // distinct transactions that last moved the checkpoints
	}{
		{"group", false, 1},
		{"no group", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			b.appendOne(t, "skill:acme.ok", "skill.installed", map[string]any{"version": "1.0.0", "publisher": "acme"})
			for i := range 20 {
				stream := b.request(t, fmt.Sprintf("00000000-0000-0000-0000-%012d", i), fmt.Sprintf("p%d", i%3))
				b.appendOne(t, stream, "policy.decided", map[string]any{"decision": "allow", "stage": "allow", "policy_digest": "sha256:00"})
				b.appendOne(t, stream, "execution.finished", map[string]any{"state": "succeeded", "tier": "A",
					"resources": map[string]any{"fuel_used": 10 + i}})
			}
			last := b.appendOne(t, "skill:acme.ok", "skill.enabled", map[string]any{})

			cfg := fast
			cfg.NoGroup = tc.noGroup
			e, stop := b.start(t, b.exec.Pool, cfg, projector.ReadModels()...)
			for _, name := range readModelNames {
				waitFor(t, name+" to pass the last event", passed(t, e, name, last))
			}
			stop()
			var txs, positions int
			if err := b.db.Pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text), count(DISTINCT position)
FROM ledger.projections WHERE name = ANY($1)`, readModelNames).Scan(&txs, &positions); err != nil {
				t.Fatal(err)
			}
			if txs != tc.txs || positions != 1 {
				t.Errorf("the checkpoints were last moved by %d transactions to %d positions, want %d to 1", txs, positions, tc.txs)
			}
			checks, err := projector.Verify(ctx, b.db.Pool, readModelNames...)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if !c.OK() {
					t.Errorf("%+v differs from its rebuild", c)
				}
			}
			var fuel int64
			if err := b.db.Pool.QueryRow(ctx, `SELECT sum(fuel) FROM ledger.quota_usage`).Scan(&fuel); err != nil || fuel != 20*10+190 {
				t.Errorf("fuel %d, %v; want %d", fuel, err, 20*10+190)
			}
		})
	}
}

// TestReadModelGroupTakesEveryLockOrNone: while another session holds one
// read model's lock (a runner elsewhere), the group applies none of them,
// and holds none of the others' locks; once it is free the group takes all
// three and catches up.
func TestReadModelGroupTakesEveryLockOrNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	conn, err := b.db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var taken bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(x'70726f6a'::int, lock_key::int) FROM ledger.projections WHERE name = 'quota_usage'`).Scan(&taken); err != nil || !taken {
		t.Fatalf("lock quota_usage: %v, %v", taken, err)
	}
	last := b.appendOne(t, b.request(t, "00000000-0000-0000-0000-000000000001", "p1"), "policy.decided",
		map[string]any{"decision": "allow", "stage": "allow"})
	e, _ := b.start(t, b.exec.Pool, fast, projector.ReadModels()...)
	// Long enough for several of the group's lock attempts (fast retries
	// every 50 ms) and steps, had it taken the locks it could.
	time.Sleep(500 * time.Millisecond)
	for _, name := range readModelNames {
		if s := statusOf(t, e, name); s.Checkpoint.Position != 0 {
			t.Errorf("%s moved to %d while quota_usage's lock was held elsewhere", name, s.Checkpoint.Position)
		}
	}
	// A group attempt holds the locks it took for a moment before it gives
	// them back; one that kept them would show in every sample.
	held := 0
	for range 10 {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = x'70726f6a'::int::oid
AND granted AND pid <> pg_backend_pid()
AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others > 0 {
			held++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if held == 10 {
		t.Errorf("the group keeps read model locks while it cannot take quota_usage's")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	for _, name := range readModelNames {
		waitFor(t, name+" to catch up", passed(t, e, name, last))
	}
}

// TestGroupStepAppliesEachFromItsOwnCheckpoint: read models at different
// checkpoints (one stepped ahead alone) are stepped together from the
// furthest behind; each applies only what is after its own checkpoint,
// none applies an event twice or skips one, and all end where a rebuild
// ends.
func TestGroupStepAppliesEachFromItsOwnCheckpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendOne(t, "skill:acme.ok", "skill.installed", map[string]any{"version": "1.0.0", "publisher": "acme"})
	for i := range 12 {
		stream := b.request(t, fmt.Sprintf("00000000-0000-0000-0000-%012d", i), "p1")
		b.appendOne(t, stream, "policy.decided", map[string]any{"decision": "allow", "stage": "allow"})
		b.appendOne(t, stream, "execution.finished", map[string]any{"state": "succeeded", "tier": "A",
			"resources": map[string]any{"fuel_used": 1}})
	}
	b.appendOne(t, "skill:acme.ok", "skill.enabled", map[string]any{})
	// quota_usage steps ahead alone, by 11 events, in two steps.
	for range 2 {
		if _, err := b.db.Pool.Exec(ctx, `SELECT * FROM ledger.projection_step('quota_usage',
			(SELECT tx_id FROM ledger.projections WHERE name = 'quota_usage'),
			(SELECT position FROM ledger.projections WHERE name = 'quota_usage'), 6)`); err != nil {
			t.Fatal(err)
		}
	}
	steps := 0
	for {
		rows, err := b.db.Pool.Query(ctx, `SELECT name, applied FROM ledger.projection_step_group($1, 4)`, readModelNames)
		if err != nil {
			t.Fatal(err)
		}
		moved := map[string]int64{}
		for rows.Next() {
			var name string
			var applied int64
			if err := rows.Scan(&name, &applied); err != nil {
				t.Fatal(err)
			}
			moved[name] = applied
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(moved) == 0 {
			break
		}
		// The first steps cover what quota_usage has applied: it is not moved.
		if steps == 0 {
			if _, ok := moved["quota_usage"]; ok {
				t.Errorf("the first group step moved quota_usage, which was ahead of it: %v", moved)
			}
		}
		steps++
		if steps > 100 {
			t.Fatal("the group step never ran out of events")
		}
	}
	var positions int
	if err := b.db.Pool.QueryRow(ctx, `SELECT count(DISTINCT position) FROM ledger.projections WHERE name = ANY($1)`,
		readModelNames).Scan(&positions); err != nil || positions != 1 {
		t.Errorf("the read models end at %d positions (%v), want one", positions, err)
	}
	checks, err := projector.Verify(ctx, b.db.Pool, readModelNames...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK() {
			t.Errorf("%+v differs from its rebuild", c)
		}
	}
}
