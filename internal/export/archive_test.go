package export_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
)

// TestArchive: a closed partition of the log is exported as a bundle of
// its leaves that verifies offline, recorded and detached; afterwards
// verify --db checks the archived leaves against the tree and later
// checkpoints, the read models keep being applied, rebuilds refuse, and
// a forged archive record is a fault. What is not closed is refused.
func TestArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newTestLog(t)
	admin := l.db.LoginRole(t, "", "ledger_admin")
	// Partitions 30 transactions wide, so that the requests fill several.
	if _, err := l.db.Pool.Exec(ctx, `DO $$
DECLARE p text;
BEGIN
    FOR p IN SELECT name FROM ledger.event_partitions() WHERE from_tx_id IS NOT NULL AND last_position IS NULL LOOP
        EXECUTE format('DROP TABLE ledger.%I', p);
    END LOOP;
END $$;
UPDATE ledger.event_partitioning SET width = 30, ahead = 100;
SELECT ledger.events_partition_ahead();`); err != nil {
		t.Fatal(err)
	}
	l.startSealer(t)
	l.startExecutor(t)
	for i := range 12 {
		id := l.submit(t, l.alice, "echo", map[string]any{"text": strings.Repeat("x", i)})
		l.awaitCovered(t, l.alice, id)
	}

	// Not closed: the range of a running transaction, and the default
	// partition, never.
	open, err := l.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Rollback(ctx) }()
	var running string
	if err := open.QueryRow(ctx, `SELECT name FROM ledger.event_partitions()
WHERE pg_current_xact_id() >= from_tx_id AND pg_current_xact_id() < to_tx_id`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	if _, err := export.PlanArchive(ctx, admin.Pool, running); err == nil || !strings.Contains(err.Error(), "is not closed") {
		t.Fatalf("archive plan of %s, the range of a running transaction: %v, want a refusal: not closed", running, err)
	}
	_ = open.Rollback(ctx)
	ps, err := export.Partitions(ctx, admin.Pool, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.PlanArchive(ctx, admin.Pool, "events_default"); err == nil || !strings.Contains(err.Error(), "default partition") {
		t.Fatalf("archive plan of the default partition: %v, want a refusal", err)
	}
	if _, err := export.PlanArchive(ctx, l.auditor.Pool, ps[0].Name); !isDenied(err) {
		t.Fatalf("an auditor's archive plan: %v, want permission denied", err)
	}

	// The oldest partition with events, once the read models are past it.
	var plan export.ArchivePlan
	for _, p := range ps {
		if p.FirstPos != nil && !p.Default {
			eventually(t, "partition "+p.Name+" closed", func() bool {
				plan, err = export.PlanArchive(ctx, admin.Pool, p.Name)
				return err == nil
			})
			break
		}
	}
	if plan.Events == 0 {
		t.Fatalf("no partition with events to archive: %+v", ps)
	}
	var buf bytes.Buffer
	sum, err := export.ArchiveBundle(ctx, admin.Pool, plan, time.Now(), bundle.NewWriter(&buf))
	if err != nil {
		t.Fatal(err)
	}
	archived := buf.Bytes()
	rep := l.verify(t, archived)
	if !rep.OK || rep.Events != plan.Events || rep.Scope.Leaves == nil || *rep.Scope.Leaves != plan.Leaves() {
		t.Fatalf("the archive bundle: %+v (fault %v), want %d events of leaves %+v", rep, rep.Fault, plan.Events, plan.Leaves())
	}
	hashes, err := export.RangeHashes(bytes.NewReader(archived), plan.Leaves())
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(archived)
	sha := hex.EncodeToString(digest[:])

	// Only an admin detaches, and only with the tree's own hashes.
	if _, err := export.Detach(ctx, l.auditor.Pool, plan, sum.Choice.Checkpoint.Size, hashes, sha); !isDenied(err) {
		t.Fatalf("an auditor's detach: %v, want permission denied", err)
	}
	forged := append([][]byte{bytes.Repeat([]byte{1}, 32)}, hashes[1:]...)
	if _, err := export.Detach(ctx, admin.Pool, plan, sum.Choice.Checkpoint.Size, forged, sha); err == nil || !strings.Contains(err.Error(), "not the tree's") {
		t.Fatalf("detach with a forged range hash: %v, want a refusal", err)
	}
	a, err := export.Detach(ctx, admin.Pool, plan, sum.Choice.Checkpoint.Size, hashes, sha)
	if err != nil {
		t.Fatal(err)
	}
	if a.Events != plan.Events || *a.BundleSHA256 != sha || uint64(*a.CheckpointSize) != sum.Choice.Checkpoint.Size {
		t.Fatalf("archive record %+v", a)
	}
	var attached bool
	if err := l.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass('ledger.' || $1))`, plan.Partition).Scan(&attached); err != nil || attached {
		t.Fatalf("%s still attached (%v)", plan.Partition, err)
	}

	// The log goes on: new requests, new checkpoints, the read models.
	for range 3 {
		id := l.submit(t, l.alice, "echo", map[string]any{"text": "after"})
		l.awaitCovered(t, l.alice, id)
	}
	db, err := export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !db.OK || db.Archived != uint64(plan.Events) || !strings.Contains(db.ReadModel.RebuildsSkipped, "archived") {
		t.Fatalf("verify --db after the archive: %+v (fault %v)", db, db.Fault)
	}
	if db.NewestSize <= sum.Choice.Checkpoint.Size {
		t.Fatalf("verified checkpoint %d, not one after the archive's %d", db.NewestSize, sum.Choice.Checkpoint.Size)
	}
	// Offline, the bundle still verifies: it needs nothing of the database.
	if rep := l.verify(t, archived); !rep.OK {
		t.Fatalf("the archive bundle after the detach: %v", rep.Fault)
	}

	// A rebuild would read the log from its first event: refused, naming
	// the archive.
	_, err = admin.Pool.Exec(ctx, `SELECT ledger.projection_rebuild_begin('requests')`)
	if err == nil || !strings.Contains(err.Error(), plan.Partition) {
		t.Fatalf("a rebuild after the archive: %v, want a refusal naming %s", err, plan.Partition)
	}

	// A forged archive record (its compact range) is a fault of verify --db.
	if _, err := l.db.Pool.Exec(ctx, `UPDATE ledger.event_archives SET range_hashes[1] = '\x0101010101010101010101010101010101010101010101010101010101010101'`); err != nil {
		t.Fatal(err)
	}
	db, err = export.VerifyDB(ctx, l.auditor.Pool, l.keys(), export.VerifyOptions{Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if db.OK || db.Fault == nil || db.Fault.Code != bundle.InclusionFailed || !strings.Contains(db.Fault.Message, "archived") {
		t.Fatalf("verify --db with a forged archive record: ok=%v fault %v, want inclusion_failed on the archived leaves", db.OK, db.Fault)
	}
}

func isDenied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}
