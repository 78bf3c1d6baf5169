package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/testdb"
)

func setupStore(t *testing.T) (*Store, *testdb.DB) {
	t.Helper()
	db := testdb.New(t)
	return NewStore(db.Pool), db
}

func TestAppendAndReadStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setupStore(t)

	got, err := s.Append(ctx, "test:a", NoStream,
		NewEvent{Type: "test.one", Payload: map[string]any{"n": 1}, Metadata: Metadata{Actor: "alice", TraceID: "t1"}},
		NewEvent{Type: "test.two", Payload: json.RawMessage(`{"z":1, "a" : [1,2]}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Version != 1 || got[1].Version != 2 || got[1].Position <= got[0].Position {
		t.Fatalf("appended = %+v", got)
	}
	if _, err := s.Append(ctx, "test:a", 2, NewEvent{Type: "test.three", Payload: map[string]any{}}); err != nil {
		t.Fatal(err)
	}

	events, err := s.ReadStream(ctx, "test:a", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 {
		t.Fatalf("read %d events, want 3", len(events))
	}
	// The payload comes back byte for byte, key order and spaces included.
	if string(events[1].Payload) != `{"z":1, "a" : [1,2]}` {
		t.Errorf("payload = %s", events[1].Payload)
	}
	if string(events[0].Metadata) != `{"actor":"alice","trace_id":"t1"}` {
		t.Errorf("metadata = %s", events[0].Metadata)
	}
	for i, e := range events {
		if e.Version != int64(i+1) {
			t.Errorf("event %d has version %d", i, e.Version)
		}
		if !e.Verify() {
			t.Errorf("event %d: stored hash does not match EventHash", i)
		}
		if i < 2 && e.Hash != got[i].Hash {
			t.Errorf("event %d: read hash differs from the appended one", i)
		}
	}
	tail, err := s.ReadStream(ctx, "test:a", 2, 100)
	if err != nil || len(tail) != 1 || tail[0].Type != "test.three" {
		t.Fatalf("ReadStream after 2 = %v, %v", tail, err)
	}
}

func TestAppendConcurrencyConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setupStore(t)
	ev := NewEvent{Type: "test.happened", Payload: map[string]any{}}
	if _, err := s.Append(ctx, "test:c", NoStream, ev, ev); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		expected int64
	}{
		{"stream exists", NoStream},
		{"behind the head", 1},
		{"ahead of the head", 5},
	} {
		_, err := s.Append(ctx, "test:c", tc.expected, ev)
		var ce *ConcurrencyError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConcurrency) {
			t.Fatalf("%s: err = %v, want a ConcurrencyError", tc.name, err)
		}
		if ce.Stream != "test:c" || ce.Expected != tc.expected {
			t.Errorf("%s: error = %+v", tc.name, ce)
		}
	}

	// AnyVersion appends at the head.
	got, err := s.Append(ctx, "test:c", AnyVersion, ev)
	if err != nil || got[0].Version != 3 {
		t.Fatalf("AnyVersion: %+v, %v", got, err)
	}
}

func TestAppendRacingWritersOneWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setupStore(t)
	const writers = 8
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			_, err := s.Append(ctx, "test:race", NoStream, NewEvent{Type: "test.raced", Payload: map[string]any{"writer": i}})
			errs <- err
		}()
	}
	var won, lost int
	for range writers {
		switch err := <-errs; {
		case err == nil:
			won++
		case errors.Is(err, ErrConcurrency):
			lost++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if won != 1 || lost != writers-1 {
		t.Fatalf("won %d, lost %d", won, lost)
	}
}

func TestAppendBatchIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := setupStore(t)
	ev := NewEvent{Type: "test.happened", Payload: map[string]any{}}
	if _, err := s.Append(ctx, "test:b", NoStream, ev); err != nil {
		t.Fatal(err)
	}
	// The second stream's expectation is wrong: nothing of the batch lands.
	_, err := s.AppendBatch(ctx, db.Pool, []StreamAppend{
		{Stream: "test:fresh", Expected: NoStream, Events: []NewEvent{ev, ev}},
		{Stream: "test:b", Expected: 0, Events: []NewEvent{ev}},
	})
	var ce *ConcurrencyError
	if !errors.As(err, &ce) || ce.Stream != "test:b" {
		t.Fatalf("err = %v, want a ConcurrencyError on test:b", err)
	}
	if events, _ := s.ReadStream(ctx, "test:fresh", 0, 10); len(events) != 0 {
		t.Fatalf("a failed batch left %d events behind", len(events))
	}
	got, err := s.AppendBatch(ctx, db.Pool, []StreamAppend{
		{Stream: "test:fresh", Expected: NoStream, Events: []NewEvent{ev, ev}},
		{Stream: "test:b", Expected: 1, Events: []NewEvent{ev}},
	})
	if err != nil || len(got) != 3 || got[2].Stream != "test:b" || got[2].Version != 2 {
		t.Fatalf("batch = %+v, %v", got, err)
	}
}

func TestAppendInCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := setupStore(t)
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := s.AppendBatch(ctx, tx, []StreamAppend{{Stream: "test:tx", Events: []NewEvent{{Type: "test.happened", Payload: map[string]any{}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if events, _ := s.ReadStream(ctx, "test:tx", 0, 10); len(events) != 0 {
		t.Fatal("a rolled-back append is visible")
	}
}

func TestAppendRejectsInvalidEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setupStore(t)
	for name, tc := range map[string]struct {
		stream string
		ev     NewEvent
	}{
		"array payload":    {"test:x", NewEvent{Type: "test.bad", Payload: json.RawMessage(`[1]`)}},
		"invalid JSON":     {"test:x", NewEvent{Type: "test.bad", Payload: json.RawMessage(`{"a":`)}},
		"type without .":   {"test:x", NewEvent{Type: "nodot", Payload: map[string]any{}}},
		"stream uppercase": {"Test:x", NewEvent{Type: "test.bad", Payload: map[string]any{}}},
		"unmarshalable":    {"test:x", NewEvent{Type: "test.bad", Payload: map[string]any{"f": func() {}}}},
	} {
		_, err := s.Append(ctx, tc.stream, NoStream, tc.ev)
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", name, err)
		}
	}
}

// TestEventsAreImmutable checks that UPDATE, DELETE and TRUNCATE are refused
// even for a superuser, also one that switches triggers off for replication.
func TestEventsAreImmutable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := setupStore(t)
	if _, err := s.Append(ctx, "test:imm", NoStream, NewEvent{Type: "test.happened", Payload: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || !super {
		t.Fatalf("the test needs a superuser connection (super=%v, err=%v)", super, err)
	}
	for _, replica := range []bool{false, true} {
		mode := "origin"
		if replica {
			mode = "replica"
		}
		if _, err := conn.Exec(ctx, "SET session_replication_role = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			"UPDATE ledger.events SET payload = '{\"forged\":true}'",
			"DELETE FROM ledger.events",
			"TRUNCATE ledger.events",
		} {
			_, err := conn.Exec(ctx, stmt)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(pgErr.Message, "append-only") {
				t.Errorf("%s (%s): err = %v, want refusal", stmt, mode, err)
			}
		}
	}
	// A generated hash cannot be supplied either.
	_, err = conn.Exec(ctx, `INSERT INTO ledger.events (stream, version, type, payload, hash) VALUES ('test:h', 1, 'test.forged', '{}', '\x00')`)
	if err == nil {
		t.Error("inserting a hash of one's own was accepted")
	}
}

func TestEventHashMatchesDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := setupStore(t)
	// Multi-byte text, escapes and a NUL escape all hash as stored.
	payload := json.RawMessage(`{"text":"héllo ✓ \u0000 \"q\"","n":1e3}`)
	if _, err := s.Append(ctx, "test:hash", NoStream, NewEvent{Type: "test.hashed", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	events, err := s.ReadStream(ctx, "test:hash", 0, 1)
	if err != nil || len(events) != 1 {
		t.Fatal(events, err)
	}
	e := events[0]
	if string(e.Payload) != string(payload) || !e.Verify() {
		t.Fatalf("payload %s verify=%v", e.Payload, e.Verify())
	}
	var dbHash []byte
	err = db.Pool.QueryRow(ctx, `SELECT ledger.event_hash(stream, version, type, payload, metadata, recorded_at) FROM ledger.events WHERE stream = 'test:hash'`).Scan(&dbHash)
	if err != nil || string(dbHash) != string(e.Hash[:]) {
		t.Fatalf("recomputed %x, stored %x, err %v", dbHash, e.Hash, err)
	}
	// Each field is bound: changing any of them changes the hash.
	base := EventHash(e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt)
	for name, h := range map[string][32]byte{
		"stream":   EventHash(e.Stream+"x", e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt),
		"version":  EventHash(e.Stream, e.Version+1, e.Type, e.Payload, e.Metadata, e.RecordedAt),
		"type":     EventHash(e.Stream, e.Version, e.Type+"x", e.Payload, e.Metadata, e.RecordedAt),
		"payload":  EventHash(e.Stream, e.Version, e.Type, []byte(`{}`), e.Metadata, e.RecordedAt),
		"metadata": EventHash(e.Stream, e.Version, e.Type, e.Payload, []byte(`{"a":1}`), e.RecordedAt),
		"time":     EventHash(e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt.Add(time.Microsecond)),
		// Moving bytes between adjacent fields must not collide.
		"boundary": EventHash(e.Stream, e.Version, e.Type[:len(e.Type)-1], append([]byte{e.Type[len(e.Type)-1]}, e.Payload...), e.Metadata, e.RecordedAt),
	} {
		if h == base {
			t.Errorf("changing %s did not change the hash", name)
		}
	}
}

// TestEventHashIgnoresSearchPath: the stored hash means the same bytes
// whatever search_path the writing session has. A session that puts a schema
// of its own ahead of pg_catalog, shadowing each function and the bytea ||
// operator the hash uses, still stores and computes the hash Go computes.
// (ledger.event_hash pins its search_path today; a body without that clause
// was measured in issue 15 and must then qualify every name: this catches
// one that does not. See docs/benchmarks.md.)
func TestEventHashIgnoresSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := setupStore(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{
		`CREATE SCHEMA shadow`,
		`CREATE FUNCTION shadow.convert_to(text, name) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$ SELECT '\x00'::pg_catalog.bytea $$`,
		`CREATE FUNCTION shadow.octet_length(text) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 0 $$`,
		`CREATE FUNCTION shadow.length(bytea) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 0 $$`,
		`CREATE FUNCTION shadow.int8send(bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$ SELECT '\x01'::pg_catalog.bytea $$`,
		`CREATE FUNCTION shadow.sha256(bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$ SELECT '\x02'::pg_catalog.bytea $$`,
		`CREATE FUNCTION shadow.first(bytea, bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$ SELECT $1 $$`,
		`CREATE OPERATOR shadow.|| (LEFTARG = bytea, RIGHTARG = bytea, FUNCTION = shadow.first)`,
		`SET search_path = shadow, pg_catalog, ledger`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	defer conn.Exec(context.WithoutCancel(ctx), `RESET search_path`)

	// Written directly, as the table's owner may: the generated column
	// runs in the session's search_path.
	stream, typ := `test:sp \x41 é✓`, "test.shadowed"
	payload, metadata := `{"a":"\\x00 \\ é","b":[1, 2 ]}`, `{"actor":"\\"}`
	if _, err := conn.Exec(ctx, `INSERT INTO ledger.events (stream, version, type, payload, metadata) VALUES ($1, 1, $2, $3, $4)`,
		stream, typ, payload, metadata); err != nil {
		t.Fatal(err)
	}
	events, err := s.ReadStream(ctx, stream, 0, 1)
	if err != nil || len(events) != 1 {
		t.Fatal(events, err)
	}
	if e := events[0]; string(e.Payload) != payload || string(e.Metadata) != metadata || !e.Verify() {
		t.Errorf("stored under a shadowing search_path: payload %s, metadata %s, verify %v", e.Payload, e.Metadata, e.Verify())
	}

	// Called directly, for times on both sides of the epoch.
	for _, at := range []time.Time{
		time.Date(1969, 7, 20, 20, 17, 40, 123456000, time.UTC),
		time.Date(2026, 11, 25, 12, 0, 0, 999999000, time.UTC),
	} {
		var got []byte
		if err := conn.QueryRow(ctx, `SELECT ledger.event_hash($1, 7, $2, $3::json, $4::json, $5)`,
			stream, typ, payload, metadata, at).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := EventHash(stream, 7, typ, []byte(payload), []byte(metadata), at); string(got) != string(want[:]) {
			t.Errorf("event_hash at %v = %x, EventHash = %x", at, got, want)
		}
	}
}

// noHorizonReadAll is ReadAll without the transaction horizon: what a naive
// reader that trusts positions does. The commit-order test runs it to show
// the scenario really loses an event without the horizon.
const noHorizonReadAll = `SELECT ` + eventColumns + ` FROM ledger.events e
WHERE (e.tx_id, e.position) > ($1::xid8, $2) ORDER BY e.tx_id, e.position LIMIT $3`

// lateCommitScenario interleaves a slow writer that takes the lower position
// and a fast writer that takes the higher one and commits first, with a
// reader polling in between. It returns the stream ids in the order the
// reader delivered them.
func lateCommitScenario(t *testing.T, query string) []string {
	t.Helper()
	ctx := context.Background()
	s, db := setupStore(t)
	ev := NewEvent{Type: "test.written", Payload: map[string]any{}}

	slow, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	slowAt, err := s.AppendBatch(ctx, slow, []StreamAppend{{Stream: "test:slow", Events: []NewEvent{ev}}})
	if err != nil {
		t.Fatal(err)
	}
	fastAt, err := s.Append(ctx, "test:fast", NoStream, ev)
	if err != nil {
		t.Fatal(err)
	}
	if fastAt[0].Position <= slowAt[0].Position {
		t.Fatalf("setup: fast position %d not after slow %d", fastAt[0].Position, slowAt[0].Position)
	}

	var delivered []string
	var cursor Cursor
	poll := func() {
		events, err := readAll(ctx, db.Pool, query, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			delivered = append(delivered, e.Stream)
			cursor = e.Cursor()
		}
	}
	poll() // the fast writer has committed; the slow one has not
	var slowXID string
	if err := slow.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&slowXID); err != nil {
		t.Fatal(err)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait until the horizon has passed both writers (other tests'
	// transactions, in any database of the cluster, may hold it back for a
	// moment: one that began between the two writers would let the slow
	// event through but not the fast one), then read once more.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var passed bool
		err := db.Pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot()) > greatest($1::xid8, (SELECT max(tx_id) FROM ledger.events))`,
			slowXID).Scan(&passed)
		if err != nil {
			t.Fatal(err)
		}
		if passed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the transaction horizon did not pass the slow writer within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	poll()
	return delivered
}

// TestReadAllDeliversLateCommits is the commit-order test: the reader must
// deliver both events, slow first (its transaction is older), and never skip
// the one that committed late.
func TestReadAllDeliversLateCommits(t *testing.T) {
	t.Parallel()
	got := lateCommitScenario(t, queryReadAll)
	if fmt.Sprint(got) != "[test:slow test:fast]" {
		t.Fatalf("delivered %v, want [test:slow test:fast]", got)
	}
}

// TestReadAllWithoutHorizonLosesEvents proves the scenario above bites:
// without the horizon check the reader passes the slow writer's event
// before it commits and never delivers it.
func TestReadAllWithoutHorizonLosesEvents(t *testing.T) {
	t.Parallel()
	got := lateCommitScenario(t, noHorizonReadAll)
	if fmt.Sprint(got) != "[test:fast]" {
		t.Fatalf("delivered %v; expected the naive reader to lose test:slow", got)
	}
}

// TestReadAllIsStableUnderConcurrentWriters runs many writers while a reader
// follows the log, and checks that the reader sees every event exactly once
// and in an order that never goes backwards.
func TestReadAllIsStableUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setupStore(t)
	const writers, perWriter = 6, 40
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range perWriter {
				stream := fmt.Sprintf("test:w%d", w)
				if _, err := s.Append(ctx, stream, int64(i), NewEvent{Type: "test.written", Payload: map[string]any{"i": i}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	seen := map[string]bool{}
	var cursor Cursor
	finished := 0
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < writers*perWriter && time.Now().Before(deadline) {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
			finished++
		default:
		}
		events, err := s.ReadAll(ctx, cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			key := fmt.Sprintf("%s/%d", e.Stream, e.Version)
			if seen[key] {
				t.Fatalf("%s delivered twice", key)
			}
			if c := e.Cursor(); c.TxID < cursor.TxID || (c.TxID == cursor.TxID && c.Position <= cursor.Position) {
				t.Fatalf("order went backwards: %+v after %+v", c, cursor)
			}
			seen[key] = true
			cursor = e.Cursor()
		}
	}
	if len(seen) != writers*perWriter {
		t.Fatalf("delivered %d of %d events", len(seen), writers*perWriter)
	}
}

var _ DBTX = pgx.Tx(nil)
