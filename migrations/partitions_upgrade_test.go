package migrations_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/migrations"
	"github.com/execledger/execledger/projector"
)

// TestPartitionUpgrade: a ledger written before migration 24 keeps its
// table as the first partition of ledger.events (the same file on disk,
// nothing copied), positions continue, every stream's head is known, an
// old version cannot be appended again while the next one can, and the
// log sealed afterwards verifies from its first leaf.
func TestPartitionUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := testdb.EmptyURL(t)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(migrations.Files()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 23); err != nil {
		t.Fatal(err)
	}
	// 3,000 events on 300 streams, in 30 transactions.
	for i := range 30 {
		if _, err := conn.Exec(ctx, `INSERT INTO ledger.events (stream, version, type, payload)
SELECT 'test:' || ($1 * 10 + g / 10), g % 10 + 1, 'test.filler', json_build_object('g', g) FROM generate_series(0, 99) g`, i); err != nil {
			t.Fatal(err)
		}
	}
	var file uint32
	var maxPos int64
	if err := conn.QueryRow(ctx, `SELECT pg_relation_filenode('ledger.events'), (SELECT max(position) FROM ledger.events)`).Scan(&file, &maxPos); err != nil {
		t.Fatal(err)
	}

	if _, err := migrations.Run(ctx, conn); err != nil {
		t.Fatal(err)
	}
	var kind string
	var firstFile uint32
	var rows, heads, beyond int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'ledger.events'::regclass),
       pg_relation_filenode('ledger.events_0'), (SELECT count(*) FROM ledger.events_0),
       (SELECT count(*) FROM ledger.stream_heads WHERE stream LIKE 'test:%' AND version = 10),
       (SELECT count(*) FROM ledger.event_partitions() WHERE from_tx_id IS NOT NULL AND NOT is_default)`).
		Scan(&kind, &firstFile, &rows, &heads, &beyond); err != nil {
		t.Fatal(err)
	}
	if kind != "p" || firstFile != file || rows != 3000 || heads != 300 || beyond < 2 {
		t.Fatalf("after 24: relkind %q, events_0 file %d (was %d) with %d rows, %d heads at 10, %d range partitions ahead",
			kind, firstFile, file, rows, heads, beyond)
	}

	// Version 10 of test:7 exists: appending it again is the unique
	// violation it always was; version 11 lands beyond events_0.
	_, err = conn.Exec(ctx, `SELECT * FROM ledger.append_events(ARRAY['test:7'], ARRAY[10::bigint], ARRAY['test.again'], ARRAY['{}'], ARRAY['{}'])`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "events_pkey" {
		t.Fatalf("appending test:7 version 10 again: %v, want a unique violation of events_pkey", err)
	}
	var pos int64
	var part string
	if err := conn.QueryRow(ctx, `SELECT a.position
FROM ledger.append_events(ARRAY['test:7'], ARRAY[11::bigint], ARRAY['test.next'], ARRAY['{}'], ARRAY['{}']) a`).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT e.tableoid::regclass::text FROM ledger.events e WHERE e.position = $1`, pos).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if pos <= maxPos || part == "ledger.events_0" || part == "ledger.events_default" {
		t.Fatalf("test:7 version 11 at position %d in %s; want above %d, in a range partition", pos, part, maxPos)
	}

	// Sealed afterwards, the log verifies from its first leaf.
	path := filepath.Join(t.TempDir(), "log.key")
	if _, err := ledger.GenerateNoteKey("execledger.test/upgrade", path); err != nil {
		t.Fatal(err)
	}
	signer, err := ledger.LoadNoteSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := ledger.LoadNoteVerifier(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	s := ledger.NewSealer(ledger.SealerConfig{Signer: signer, CheckpointInterval: 50 * time.Millisecond})
	eng, err := projector.New(pool, projector.Config{PollInterval: 20 * time.Millisecond}, projector.Sealer(s))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- eng.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cp, err := ledger.NewestCheckpoint(ctx, pool, false)
		if err == nil && cp.Size >= 3001 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sealer did not seal the upgraded log within 30 s: %v", err)
		}
	}
	rep, err := export.VerifyDB(ctx, pool, bundle.Keys{Log: verifier}, export.VerifyOptions{Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Events < 3001 {
		t.Fatalf("verify --db after the upgrade: %+v", rep)
	}
}
