package migrations_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/testdb"
)

// narrowPartitions drops the empty range partitions a migrated database
// starts with (100M transactions wide) and makes the next ones width
// transactions wide, ahead of them kept.
func narrowPartitions(t *testing.T, db *testdb.DB, width, ahead int) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `DO $$
DECLARE p text;
BEGIN
    FOR p IN SELECT name FROM ledger.event_partitions() WHERE from_tx_id IS NOT NULL AND last_position IS NULL LOOP
        EXECUTE format('DROP TABLE ledger.%I', p);
    END LOOP;
END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(context.Background(), `UPDATE ledger.event_partitioning SET width = $1, ahead = $2`, width, ahead); err != nil {
		t.Fatal(err)
	}
}

func appendOne(ctx context.Context, db pgx.Tx, stream string, version int64) error {
	_, err := db.Exec(ctx, `SELECT * FROM ledger.append_events(ARRAY[$1], ARRAY[$2::bigint], ARRAY['test.step'], ARRAY['{}'], ARRAY['{}'])`, stream, version)
	return err
}

func inTx(t *testing.T, db *testdb.DB, fn func(pgx.Tx) error) error {
	t.Helper()
	return pgx.BeginFunc(context.Background(), db.Pool, fn)
}

// burn uses up n transaction ids, in one statement: n subtransactions
// that each write a row.
func burn(t *testing.T, db *testdb.DB, n int) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS public.burn (x int);
DO $$
BEGIN
    FOR i IN 1..`+strconv.Itoa(n)+` LOOP
        BEGIN
            INSERT INTO public.burn VALUES (i);
        EXCEPTION WHEN others THEN RAISE;
        END;
    END LOOP;
END $$`); err != nil {
		t.Fatal(err)
	}
}

// TestAppendsNeverLackAPartition: appends that outrun the partitions made
// ahead land in the default partition; the next call of
// events_partition_ahead starts above them, and appends go on into the
// new ranges, crossing their boundaries.
func TestAppendsNeverLackAPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	narrowPartitions(t, db, 100, 1)
	var made int
	if err := db.Pool.QueryRow(ctx, `SELECT ledger.events_partition_ahead()`).Scan(&made); err != nil || made == 0 {
		t.Fatalf("events_partition_ahead: %d, %v", made, err)
	}
	v := int64(0)
	step := func() {
		t.Helper()
		v++
		if err := inTx(t, db, func(tx pgx.Tx) error { return appendOne(ctx, tx, "test:walk", v) }); err != nil {
			t.Fatalf("append version %d: %v", v, err)
		}
	}
	burn(t, db, 300) // beyond the ranges made ahead
	for range 3 {
		step()
	}
	var inDefault int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events_default`).Scan(&inDefault); err != nil || inDefault != 3 {
		t.Fatalf("events in the default partition: %d, %v; want the 3 appended beyond the ranges", inDefault, err)
	}
	// Enough ahead now that the transactions of other tests on the server
	// do not use it up.
	if _, err := db.Pool.Exec(ctx, `UPDATE ledger.event_partitioning SET ahead = 100`); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT ledger.events_partition_ahead()`).Scan(&made); err != nil || made == 0 {
		t.Fatalf("events_partition_ahead after the default partition filled: %d, %v", made, err)
	}
	for range 4 {
		step()
		burn(t, db, 110) // into the next range
	}
	var ranges, versions, stray int
	var last int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(DISTINCT tableoid) FILTER (WHERE version > 3), count(*), max(version),
       count(*) FILTER (WHERE version > 3 AND tableoid = 'ledger.events_default'::regclass)
FROM ledger.events WHERE stream = 'test:walk'`).Scan(&ranges, &versions, &last, &stray); err != nil {
		t.Fatal(err)
	}
	if versions != 7 || last != 7 || stray != 0 || ranges != 4 {
		t.Fatalf("test:walk: %d versions up to %d; the last 4 in %d partitions, %d of them the default; want 7, in 4 range partitions",
			versions, last, ranges, stray)
	}
}

// TestVersionUniqueAcrossPartitions: (stream, version) stays unique when
// the two appends of one version fall in different partitions, whether
// the first has committed or is still running (the second then waits
// for it, as on a unique index).
func TestVersionUniqueAcrossPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	narrowPartitions(t, db, 2, 50)
	if _, err := db.Pool.Exec(ctx, `SELECT ledger.events_partition_ahead()`); err != nil {
		t.Fatal(err)
	}
	// Six transaction ids between two appends: with partitions 2 wide,
	// they fall in different partitions.
	burn := func() {
		for range 6 {
			if _, err := db.Pool.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantDuplicate := func(err error) {
		t.Helper()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "events_pkey" ||
			pgErr.Detail != "Key (stream, version)=(test:dup, 1) already exists." {
			t.Fatalf("second append of test:dup version 1: %v, want the unique violation of events_pkey", err)
		}
	}

	// The older transaction appends after the newer one has committed.
	older, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = older.Rollback(ctx) }()
	if _, err := older.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	burn()
	if err := inTx(t, db, func(tx pgx.Tx) error { return appendOne(ctx, tx, "test:dup", 1) }); err != nil {
		t.Fatal(err)
	}
	wantDuplicate(appendOne(ctx, older, "test:dup", 1))
	_ = older.Rollback(ctx)

	// The newer transaction appends while the older one's append is
	// uncommitted: it waits, then fails when the older commits.
	first, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(ctx) }()
	if err := appendOne(ctx, first, "test:race", 1); err != nil {
		t.Fatal(err)
	}
	burn()
	second := make(chan error, 1)
	go func() {
		second <- inTx(t, db, func(tx pgx.Tx) error { return appendOne(ctx, tx, "test:race", 1) })
	}()
	select {
	case err := <-second:
		t.Fatalf("the second append did not wait for the first: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-second
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "events_pkey" {
		t.Fatalf("second append of test:race version 1: %v, want the unique violation of events_pkey", err)
	}
}
