package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/testdb"
)

type clientSetup struct {
	db        *testdb.DB
	alice     *Client // principal "alice", a submitter
	bob       *Client // principal "bob", a submitter
	admin     *Client // the superuser, mapped to principal "ops"
	aliceRole *testdb.Role
}

func setupClients(t *testing.T) clientSetup {
	t.Helper()
	db := testdb.New(t)
	aliceRole := db.LoginRole(t, "alice", "ledger_submitter")
	bobRole := db.LoginRole(t, "bob", "ledger_submitter")
	if err := db.MapPrincipal(context.Background(), "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	s := clientSetup{db: db, aliceRole: aliceRole,
		alice: NewClient(aliceRole.Pool), bob: NewClient(bobRole.Pool), admin: NewClient(db.Pool)}
	for _, c := range []*Client{s.alice, s.bob, s.admin} {
		c.recheck = 50 * time.Millisecond
		t.Cleanup(c.Close)
	}
	return s
}

func countRows(t *testing.T, db *testdb.DB, table string) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSubmitAndGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{"text": "hi"}, RunID: "run-1",
		Context: RequestContext{Device: "laptop", Channel: "cli", Session: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if id.Version() != 7 {
		t.Errorf("id %s is not a version 7 UUID", id)
	}
	r, err := s.alice.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != id || r.Principal != "alice" || r.Tool != "echo" || *r.RunID != "run-1" || r.State != StatePending ||
		r.ErrorKind != nil || r.FinishedAt != nil || time.Since(r.SubmittedAt) > time.Minute {
		t.Fatalf("request = %+v", r)
	}

	events, err := NewStore(s.db.Pool).ReadStream(ctx, "request:"+id.String(), 0, 10)
	if err != nil || len(events) != 1 {
		t.Fatalf("events = %v, %v", events, err)
	}
	e := events[0]
	var p struct {
		RequestID   uuid.UUID       `json:"request_id"`
		Principal   string          `json:"principal"`
		Tool        string          `json:"tool"`
		Input       json.RawMessage `json:"input"`
		InputDigest string          `json:"input_digest"`
		Context     RequestContext  `json:"context"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if e.Type != "tool.requested" || p.RequestID != id || p.Principal != "alice" || p.Tool != "echo" ||
		string(p.Input) != `{"text": "hi"}` || !strings.HasPrefix(p.InputDigest, "sha256:") ||
		p.Context != (RequestContext{Device: "laptop", Channel: "cli", Session: "s1"}) || !e.Verify() {
		t.Fatalf("event %s: %s", e.Type, e.Payload)
	}
	if !strings.Contains(string(e.Metadata), `"actor" : "alice"`) {
		t.Errorf("metadata = %s", e.Metadata)
	}
	if n := countRows(t, s.db, "ledger.queue"); n != 1 {
		t.Errorf("queue has %d rows", n)
	}
}

func TestSubmitIdempotency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	p := SubmitParams{Tool: "echo", Input: map[string]any{"text": "once"}, IdempotencyKey: "key-1"}
	first, err := s.alice.Submit(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.alice.Submit(ctx, p)
	if err != nil || again != first {
		t.Fatalf("retry = %s, %v; want %s", again, err, first)
	}
	// The key is the principal's own: bob's key-1 is another request.
	bobs, err := s.bob.Submit(ctx, p)
	if err != nil || bobs == first {
		t.Fatalf("bob's submit = %s, %v", bobs, err)
	}
	// Reusing the key for something else is an error, not a silent replay.
	p2 := p
	p2.Input = map[string]any{"text": "twice"}
	if _, err := s.alice.Submit(ctx, p2); !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("reused key: err = %v", err)
	}
	if n := countRows(t, s.db, "ledger.events"); n != 2 {
		t.Errorf("%d events, want 2", n)
	}

	// Concurrent first calls with one key: one request, one event.
	const callers = 16
	ids := make([]uuid.UUID, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ids[i], errs[i] = s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{"text": "race"}, IdempotencyKey: "race"})
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("caller %d: %s, %v; caller 0: %s", i, ids[i], errs[i], ids[0])
		}
	}
	if n := countRows(t, s.db, "ledger.events"); n != 3 {
		t.Errorf("%d events after the race, want 3", n)
	}
}

func TestSubmitRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	big := `{"text":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, tc := range []struct {
		name, sql, code string
		args            []any
	}{
		{"NULL input", `SELECT ledger.submit('echo', NULL)`, "22004", nil},
		{"array input", `SELECT ledger.submit('echo', '[1]')`, "22023", nil},
		{"string input", `SELECT ledger.submit('echo', '"x"')`, "22023", nil},
		{"NULL tool", `SELECT ledger.submit(NULL, '{}')`, "22023", nil},
		{"tool with space", `SELECT ledger.submit('rm -rf', '{}')`, "22023", nil},
		{"tool with empty segment", `SELECT ledger.submit('a..b', '{}')`, "22023", nil},
		{"tool too long", `SELECT ledger.submit(repeat('a', 129), '{}')`, "22023", nil},
		{"input over 1 MiB", `SELECT ledger.submit('echo', $1::jsonb)`, "54000", []any{big}},
		{"context array", `SELECT ledger.submit('echo', '{}', NULL, NULL, '[]')`, "22023", nil},
		{"context NULL", `SELECT ledger.submit('echo', '{}', NULL, NULL, NULL)`, "22023", nil},
		{"context unknown key", `SELECT ledger.submit('echo', '{}', NULL, NULL, '{"devise":"x"}')`, "22023", nil},
		{"context number", `SELECT ledger.submit('echo', '{}', NULL, NULL, '{"device":1}')`, "22023", nil},
		{"run id with slash", `SELECT ledger.submit('echo', '{}', 'a/b')`, "22023", nil},
		{"empty idempotency key", `SELECT ledger.submit('echo', '{}', NULL, '')`, "22023", nil},
		{"idempotency key with newline", `SELECT ledger.submit('echo', '{}', NULL, E'a\nb')`, "22023", nil},
		// jsonb cannot hold NUL; PostgreSQL's own parser error has no
		// stable SQLSTATE of the API's.
		{"NUL in input", `SELECT ledger.submit('echo', '{"text":"a\u0000b"}')`, "22023", nil},
		{"NUL after escaped backslashes", `SELECT ledger.submit('echo', '{"text":"a\\\\\u0000b"}')`, "22023", nil},
		{"NUL in input, parameter", `SELECT ledger.submit($1, $2)`, "22023", []any{"echo", `{"t":"\u0000"}`}},
		{"NUL in context", `SELECT ledger.submit('echo', '{}', NULL, NULL, '{"device":"\u0000"}')`, "22023", nil},
		{"input not JSON", `SELECT ledger.submit('echo', '{nope')`, "22023", nil},
	} {
		_, err := s.aliceRole.Pool.Exec(ctx, tc.sql, tc.args...)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tc.code || !strings.HasPrefix(pgErr.Message, "ledger.submit: ") {
			t.Errorf("%s: err = %v, want SQLSTATE %s", tc.name, err, tc.code)
		}
	}
	// The Go client maps them to the package's errors.
	if _, err := s.alice.Submit(ctx, SubmitParams{Tool: "bad tool", Input: map[string]any{}}); !errors.Is(err, ErrInvalidInput) ||
		!strings.HasPrefix(err.Error(), "ledger: submit: invalid input: tool must be") {
		// Once "ledger: submit: invalid input: ledger.submit: tool …".
		t.Errorf("client, bad tool: %v", err)
	}
	if _, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: json.RawMessage(big)}); !errors.Is(err, ErrInputTooLarge) {
		t.Errorf("client, big input: %v", err)
	}
	if _, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: []int{1}}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("client, array input: %v", err)
	}
	if _, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{"text": "a\x00b"}}); !errors.Is(err, ErrInvalidInput) ||
		!strings.Contains(err.Error(), "NUL") {
		t.Errorf("client, NUL in input: %v", err)
	}
	// Nothing is half-written.
	for _, table := range []string{"ledger.events", "ledger.request_status", "ledger.queue"} {
		if n := countRows(t, s.db, table); n != 0 {
			t.Errorf("%s has %d rows after rejected submits", table, n)
		}
	}
	// An escaped backslash before u0000 is text, not NUL.
	for _, in := range []string{`{"text":"a\\u0000b"}`, `{"text":"\\\\u0000"}`} {
		if _, err := s.aliceRole.Pool.Exec(ctx, `SELECT ledger.submit('echo', $1)`, in); err != nil {
			t.Errorf("%s: %v", in, err)
		}
		if _, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: json.RawMessage(in)}); err != nil {
			t.Errorf("client, %s: %v", in, err)
		}
	}
}

func TestSubmitNeedsAMappedRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	unmapped := NewClient(db.LoginRole(t, "", "ledger_submitter").Pool)
	defer unmapped.Close()
	_, err := unmapped.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if !errors.Is(err, ErrNotPermitted) || !strings.Contains(err.Error(), "not mapped to a principal") {
		t.Fatalf("err = %v", err)
	}
	// A login role without ledger_submitter may not call it at all.
	outsider := NewClient(db.LoginRole(t, "mallory").Pool)
	defer outsider.Close()
	if _, err := outsider.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}}); !errors.Is(err, ErrNotPermitted) {
		t.Fatalf("outsider: err = %v", err)
	}
}

func TestPrincipalsSeeOnlyTheirOwnRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	aliceID, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{"secret": "alice's"}})
	if err != nil {
		t.Fatal(err)
	}
	bobID, err := s.bob.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.bob.Get(ctx, aliceID); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob reading alice's request: %v", err)
	}
	if _, err := s.bob.Cancel(ctx, aliceID, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob cancelling alice's request: %v", err)
	}
	if r, err := s.alice.Get(ctx, aliceID); err != nil || r.State != StatePending {
		t.Errorf("alice's request after bob's cancel: %+v, %v", r, err)
	}
	for _, q := range []string{"SELECT id FROM ledger.requests", "SELECT id FROM ledger.request_status"} {
		rows, err := s.aliceRole.Pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var seen []uuid.UUID
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, id)
		}
		if rows.Err() != nil || len(seen) != 1 || seen[0] != aliceID {
			t.Errorf("%s as alice: %v, %v (bob's is %s)", q, seen, rows.Err(), bobID)
		}
	}
	// The admin sees both.
	if _, err := s.admin.Get(ctx, aliceID); err != nil {
		t.Errorf("admin: %v", err)
	}
}

// TestSubmitterCannotWriteOrReadTheLog checks least privilege: a submitter
// reaches the ledger only through submit, cancel and its own rows.
func TestSubmitterCannotWriteOrReadTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO ledger.events (stream, version, type, payload) VALUES ('request:x', 1, 'tool.requested', '{}')`,
		`SELECT * FROM ledger.events`,
		`SELECT * FROM ledger.read_all('0', 0, 10)`,
		`SELECT * FROM ledger.append_events(ARRAY['request:x'], ARRAY[1::bigint], ARRAY['tool.requested'], ARRAY['{}'], ARRAY['{}'])`,
		`INSERT INTO ledger.queue (id) VALUES (gen_random_uuid())`,
		`SELECT * FROM ledger.queue`,
		`DELETE FROM ledger.queue`,
		`UPDATE ledger.request_status SET state = 'succeeded'`,
		`INSERT INTO ledger.principals VALUES ('x', 'bob')`,
		`UPDATE ledger.principals SET principal = 'bob'`,
		`INSERT INTO ledger.queue_waiters (executor) VALUES ('x')`,
	} {
		_, err := s.aliceRole.Pool.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s: err = %v, want permission denied", stmt, err)
		}
	}
	if r, err := s.alice.Get(ctx, id); err != nil || r.State != StatePending {
		t.Errorf("request after the attempts: %+v, %v", r, err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 10}})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := s.alice.Cancel(ctx, id, "changed my mind")
	if err != nil || !ok {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	r, err := s.alice.Get(ctx, id)
	if err != nil || r.State != StateCancelled || *r.ErrorKind != KindCancelled || r.FinishedAt == nil ||
		!strings.Contains(*r.Error, "changed my mind") {
		t.Fatalf("after cancel: %+v, %v", r, err)
	}
	if ok, err := s.alice.Cancel(ctx, id, ""); err != nil || ok {
		t.Fatalf("second cancel = %v, %v; want false", ok, err)
	}
	events, err := NewStore(s.db.Pool).ReadStream(ctx, "request:"+id.String(), 0, 10)
	if err != nil || len(events) != 2 || events[1].Type != "request.cancelled" || events[1].Version != 2 {
		t.Fatalf("events = %+v, %v", events, err)
	}
	if n := countRows(t, s.db, "ledger.queue"); n != 0 {
		t.Errorf("the queue kept %d rows", n)
	}
	if _, err := s.alice.Cancel(ctx, uuid.New(), ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancel of an unknown id: %v", err)
	}

	// A running request is flagged for its executor, not ended here.
	running, err := s.alice.Submit(ctx, SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Pool.Exec(ctx, "UPDATE ledger.queue SET state = 'running' WHERE id = $1", running); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.alice.Cancel(ctx, running, ""); err != nil || !ok {
		t.Fatalf("cancel running = %v, %v", ok, err)
	}
	var flagged bool
	if err := s.db.Pool.QueryRow(ctx, "SELECT cancel_requested FROM ledger.queue WHERE id = $1", running).Scan(&flagged); err != nil || !flagged {
		t.Fatalf("cancel_requested = %v, %v", flagged, err)
	}
}

func TestAwait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	s.alice.recheck = time.Hour // only the notification can wake it

	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Request, 1)
	go func() {
		r, err := s.alice.Await(ctx, id)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	time.Sleep(100 * time.Millisecond) // let Await subscribe and read "pending"
	if _, err := s.bob.Cancel(ctx, id, ""); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := s.alice.Cancel(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r == nil || r.State != StateCancelled {
			t.Fatalf("await returned %+v", r)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Await did not return after the request was cancelled")
	}

	// A deadline ends the wait with the context's error.
	pending, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.alice.Await(short, pending); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("await with a deadline: %v", err)
	}
	// Unknown ids fail at once.
	if _, err := s.alice.Await(ctx, uuid.New()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("await of an unknown id: %v", err)
	}
}

// TestAwaitSurvivesLostNotifications finishes a request without any
// NOTIFY: Await must still return, from its periodic re-read.
func TestAwaitSurvivesLostNotifications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, err := s.db.Pool.Exec(ctx, `UPDATE ledger.request_status SET state = 'succeeded', finished_at = now(), output = '{"text":"x"}' WHERE id = $1`, id)
		if err != nil {
			t.Error(err)
		}
	}()
	// Long enough for many re-reads on a busy machine: a bound for a wait
	// that never ends.
	deadline, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r, err := s.alice.Await(deadline, id)
	if err != nil || r.State != StateSucceeded || string(r.Output) != `{"text": "x"}` {
		t.Fatalf("await = %+v, %v", r, err)
	}
}

// TestLegacyDoneIDs: ledger_request_done carries no request id unless an
// administrator turns execledger.legacy_done_ids on for the database (the
// deprecation release); the principal's own channel always carries it.
func TestLegacyDoneIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	stranger := s.db.LoginRole(t, "")
	heard := func(pool string) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "LISTEN ledger_request_done"); err != nil {
			t.Fatal(err)
		}
		// A fresh connection of alice's, so that it reads the database's
		// current setting.
		alice, err := pgx.Connect(ctx, s.aliceRole.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer alice.Close(ctx)
		var id string
		if err := alice.QueryRow(ctx, `SELECT ledger.submit('echo', '{}'::jsonb)::text`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Exec(ctx, `SELECT ledger.cancel($1::uuid)`, id); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload != "" && n.Payload != id {
			t.Fatalf("payload %q is not the request's id %s", n.Payload, id)
		}
		return n.Payload
	}
	if p := heard(stranger.URL); p != "" {
		t.Fatalf("by default a role with no grants heard %q", p)
	}
	if _, err := s.db.Pool.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{s.db.Name}.Sanitize()+" SET execledger.legacy_done_ids = on"); err != nil {
		t.Fatal(err)
	}
	if p := heard(stranger.URL); p == "" {
		t.Fatal("with execledger.legacy_done_ids on, ledger_request_done carried no id")
	}
}
