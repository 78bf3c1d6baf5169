package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/testdb"
)

// The SQL side of ledger.submit_many, and the request_status row that
// submit and submit_many write from their own values (issue 24).

// boundRole is a submitter whose channel and device an administrator has
// bound (ledger.principals).
func boundRole(t *testing.T, db *testdb.DB, principal string) *testdb.Role {
	t.Helper()
	r := db.LoginRole(t, principal, "ledger_submitter")
	if _, err := db.Pool.Exec(context.Background(),
		`UPDATE ledger.principals SET channel = 'slack', device = 'kiosk-7' WHERE login_role = $1`, r.Name); err != nil {
		t.Fatal(err)
	}
	return r
}

const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// submitCases are requests that exercise every column submit writes.
var submitCases = []SubmitParams{
	{Tool: "echo", Input: map[string]any{"text": "hi"}},
	{Tool: "echo", Input: map[string]any{"text": "with run"}, RunID: "run-1"},
	{Tool: "acme.hello-world_2", Input: map[string]any{"n": 1.5, "nested": map[string]any{"a": []any{1, "b", nil}}},
		RunID: "run.2:x-y", IdempotencyKey: "key-1"},
	{Tool: "echo", Input: map[string]any{"text": "quotes \" and \\ and é ☃ \n\t"}, IdempotencyKey: `k"\é ☃ 'q'`},
	{Tool: "echo", Input: map[string]any{}, Context: RequestContext{Device: "laptop", Channel: "slack", Session: "s1"}},
	{Tool: "echo", Input: map[string]any{"t": 1}, Context: RequestContext{Traceparent: traceparent}},
	{Tool: "echo", Input: map[string]any{"t": 2}, Context: RequestContext{Traceparent: traceparent, Tracestate: "vendor=a,other=b"},
		RunID: "run-1", IdempotencyKey: "key-2"},
}

// TestSubmitRowEqualsRebuild: the request_status rows submit and
// submit_many write from their own values are the rows a rebuild derives
// from their tool.requested events (ledger.apply_requests), column by
// column, for principals with and without a bound context.
func TestSubmitRowEqualsRebuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	free := db.LoginRole(t, "alice", "ledger_submitter")
	bound := boundRole(t, db, "bob")
	n := 0
	for _, role := range []*testdb.Role{free, bound} {
		cases := slices.Clone(submitCases)
		for i := range cases {
			if role == bound && cases[i].Context.Device != "" {
				cases[i].Context.Device = "kiosk-7" // the bound value, which the bound role may repeat
			}
		}
		for _, p := range cases {
			if _, err := Submit(ctx, role.Pool, p); err != nil {
				t.Fatalf("submit %+v as %s: %v", p, role.Name, err)
			}
			n++
		}
		many := slices.Clone(cases)
		for i := range many {
			if many[i].IdempotencyKey != "" {
				many[i].IdempotencyKey += "-many"
			}
		}
		// A key repeated within the call, and one submit used already:
		// no new rows.
		many = append(many, many[2], cases[2])
		ids, err := SubmitMany(ctx, role.Pool, many)
		if err != nil {
			t.Fatalf("submit_many as %s: %v", role.Name, err)
		}
		if ids[len(ids)-2] != ids[2] {
			t.Errorf("a key repeated within the call: %s, want the first's %s", ids[len(ids)-2], ids[2])
		}
		n += len(submitCases)
	}
	if got := countRows(t, db, "ledger.request_status"); got != n {
		t.Fatalf("%d request rows, want %d", got, n)
	}
	var bounded int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events
		WHERE payload->'context_bound' IS NOT NULL AND json_array_length(payload->'context_bound') = 2`).Scan(&bounded); err != nil {
		t.Fatal(err)
	}
	if bounded != 2*len(submitCases) {
		t.Errorf("%d events with a bound context, want %d", bounded, 2*len(submitCases))
	}
	assertRequestsRebuildEqual(t, db, n)
}

// assertRequestsRebuildEqual rebuilds the requests read model the way
// projector verify does (ledger.projection_verify, into temporary tables)
// and compares it with the live table column by column.
func assertRequestsRebuildEqual(t *testing.T, db *testdb.DB, want int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var live, rebuilt int64
	var diff *string
	if err := tx.QueryRow(ctx, `SELECT live_rows, rebuilt_rows, first_difference FROM ledger.projection_verify('requests')
		WHERE table_name = 'request_status'`).Scan(&live, &rebuilt, &diff); err != nil {
		t.Fatal(err)
	}
	if live != int64(want) || rebuilt != int64(want) || diff != nil {
		t.Errorf("projection_verify: live %d, rebuilt %d rows (want %d), first difference %v", live, rebuilt, want, deref(diff))
	}
	var cols []string
	if err := tx.QueryRow(ctx, `SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
		WHERE attrelid = 'ledger.request_status'::regclass AND attnum > 0 AND NOT attisdropped`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if len(cols) < 14 {
		t.Fatalf("request_status has columns %v", cols)
	}
	for _, c := range cols {
		col := pgx.Identifier{c}.Sanitize()
		var differ int
		var example *string
		err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), min(format('%%s: live %%s, rebuilt %%s', l.id, l.%[1]s, r.%[1]s))
			FROM ledger.request_status l FULL JOIN pg_temp.request_status r ON r.id = l.id
			WHERE l.id IS NULL OR r.id IS NULL OR l.%[1]s IS DISTINCT FROM r.%[1]s`, col)).Scan(&differ, &example)
		if err != nil {
			t.Fatal(err)
		}
		if differ != 0 {
			t.Errorf("column %s differs in %d rows, e.g. %s", c, differ, deref(example))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestSubmitManyErrorsAreSubmits: for each input submit refuses,
// submit_many refuses the call with the same SQLSTATE and words, naming
// the element, and writes nothing.
func TestSubmitManyErrorsAreSubmits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	free := db.LoginRole(t, "alice", "ledger_submitter")
	bound := boundRole(t, db, "bob")
	big := `{"text":"` + strings.Repeat("x", 1<<20) + `"}`
	s := func(v string) *string { return &v }
	good := req{tool: s("echo"), input: s(`{"ok":true}`), ctx: s(`{}`)}
	for _, tc := range []struct {
		name string
		role *testdb.Role
		r    req
	}{
		{"NULL tool", free, req{input: s(`{}`), ctx: s(`{}`)}},
		{"tool with space", free, req{tool: s("rm -rf"), input: s(`{}`), ctx: s(`{}`)}},
		{"tool too long", free, req{tool: s(strings.Repeat("a", 129)), input: s(`{}`), ctx: s(`{}`)}},
		{"NULL input", free, req{tool: s("echo"), ctx: s(`{}`)}},
		{"array input", free, req{tool: s("echo"), input: s(`[1]`), ctx: s(`{}`)}},
		{"string input", free, req{tool: s("echo"), input: s(`"x"`), ctx: s(`{}`)}},
		{"input over 1 MiB", free, req{tool: s("echo"), input: s(big), ctx: s(`{}`)}},
		{"run id with slash", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{}`), run: s("a/b")}},
		{"empty key", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{}`), key: s("")}},
		{"key with newline", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{}`), key: s("a\nb")}},
		{"key too long", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{}`), key: s(strings.Repeat("k", 256))}},
		{"NULL context", free, req{tool: s("echo"), input: s(`{}`)}},
		{"array context", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`[]`)}},
		{"unknown context key", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"session":"s","devise":"x"}`)}},
		{"number in context", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"device":1}`)}},
		{"empty context value", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"session":""}`)}},
		{"tracestate too long", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"traceparent":"` + traceparent + `","tracestate":"` + strings.Repeat("a", 513) + `"}`)}},
		{"bad traceparent", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"traceparent":"00-abc"}`)}},
		{"zero trace id", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"traceparent":"00-00000000000000000000000000000000-b7ad6b7169203331-01"}`)}},
		{"version ff", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"traceparent":"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)}},
		{"tracestate alone", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"tracestate":"a=b"}`)}},
		{"tracestate not ASCII", free, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"traceparent":"` + traceparent + `","tracestate":"a=é"}`)}},
		{"bound channel", bound, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"channel":"email"}`)}},
		{"bound device", bound, req{tool: s("echo"), input: s(`{}`), ctx: s(`{"channel":"slack","device":"phone"}`)}},
		{"several errors: the first check's", free, req{tool: s("echo"), input: s(`[]`), ctx: s(`[]`), run: s("/")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := tc.role.Pool
			_, err := pool.Exec(ctx, `SELECT ledger.submit($1, $2::jsonb, $3, $4, $5::jsonb)`, tc.r.tool, tc.r.input, tc.r.run, tc.r.key, tc.r.ctx)
			var one *pgconn.PgError
			if !errors.As(err, &one) || !strings.HasPrefix(one.Message, "ledger.submit: ") {
				t.Fatalf("submit: %v", err)
			}
			rs := []req{good, good, tc.r, good}
			var tools, inputs, contexts, runs, keys []*string
			for _, r := range rs {
				tools, inputs, contexts = append(tools, r.tool), append(inputs, r.input), append(contexts, r.ctx)
				runs, keys = append(runs, r.run), append(keys, r.key)
			}
			_, err = pool.Exec(ctx, querySubmitMany, tools, inputs, runs, keys, contexts)
			var many *pgconn.PgError
			want := "ledger.submit_many: element 3: " + strings.TrimPrefix(one.Message, "ledger.submit: ")
			if !errors.As(err, &many) || many.Code != one.Code || many.Message != want {
				t.Errorf("submit_many: %v\nwant %s: %s", err, one.Code, want)
			}
			// The Go client gives that element's caller submit's error.
			if tc.r.tool == nil || tc.r.input == nil || tc.r.ctx == nil {
				return
			}
			_, elem, err := submitMany(ctx, pool, []submitArgs{argsOf(good), argsOf(tc.r), argsOf(good)})
			if err != nil || elem == nil || elem.Index != 1 || elem.Err.Error() != sqlError("submit", one).Error() {
				t.Errorf("submitMany: %v, %v; want element 1: %v", elem, err, sqlError("submit", one))
			}
		})
	}
	for _, table := range []string{"ledger.events", "ledger.request_status", "ledger.queue"} {
		if n := countRows(t, db, table); n != 0 {
			t.Errorf("%s has %d rows after refused calls", table, n)
		}
	}
}

type req struct {
	tool, input, ctx *string
	run, key         *string
}

func argsOf(r req) submitArgs {
	return submitArgs{tool: *r.tool, input: *r.input, context: *r.ctx, runID: r.run, key: r.key}
}

// TestSubmitManyCallErrors: arguments that are no element's.
func TestSubmitManyCallErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	for _, tc := range []struct{ name, sql, code string }{
		{"NULL tools", `SELECT ledger.submit_many(NULL, ARRAY['{}']::jsonb[])`, "22004"},
		{"NULL inputs", `SELECT ledger.submit_many(ARRAY['echo'], NULL)`, "22004"},
		{"fewer inputs", `SELECT ledger.submit_many(ARRAY['echo','echo'], ARRAY['{}']::jsonb[])`, "22023"},
		{"more run ids", `SELECT ledger.submit_many(ARRAY['echo'], ARRAY['{}']::jsonb[], ARRAY['a','b'])`, "22023"},
		{"fewer keys", `SELECT ledger.submit_many(ARRAY['echo','echo'], ARRAY['{}','{}']::jsonb[], NULL, ARRAY['a'])`, "22023"},
		{"more contexts", `SELECT ledger.submit_many(ARRAY['echo'], ARRAY['{}']::jsonb[], NULL, NULL, ARRAY['{}','{}']::jsonb[])`, "22023"},
		{"two dimensions", `SELECT ledger.submit_many(ARRAY[['echo'],['echo']], ARRAY[['{}'],['{}']]::jsonb[])`, "22023"},
		{"over 1000", `SELECT ledger.submit_many(array_fill('echo'::text, ARRAY[1001]), array_fill('{}'::jsonb, ARRAY[1001]))`, "54000"},
	} {
		_, err := s.aliceRole.Pool.Exec(ctx, tc.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tc.code || !strings.HasPrefix(pgErr.Message, "ledger.submit_many: ") {
			t.Errorf("%s: err = %v, want SQLSTATE %s", tc.name, err, tc.code)
		}
	}
	// Empty: nothing written, no error.
	var ids []uuid.UUID
	if err := s.aliceRole.Pool.QueryRow(ctx, `SELECT ledger.submit_many('{}', '{}')`).Scan(&ids); err != nil || len(ids) != 0 {
		t.Errorf("empty call: %v, %v", ids, err)
	}
	// Arrays whose lower bound is not 1 are taken element by element.
	if err := s.aliceRole.Pool.QueryRow(ctx,
		`SELECT ledger.submit_many('[0:1]={echo,echo}'::text[], '[5:6]={"{\"a\":1}","{\"a\":2}"}'::jsonb[], NULL, '[3:4]={k,k}'::text[])`).Scan(&ids); err == nil {
		t.Errorf("a repeated key with other inputs went through: %v", ids)
	} else if !strings.Contains(err.Error(), "element 2: idempotency key 'k' already names element 1 of this call") {
		t.Errorf("shifted bounds: %v", err)
	}
	if err := s.aliceRole.Pool.QueryRow(ctx,
		`SELECT ledger.submit_many('[0:1]={echo,echo}'::text[], '[5:6]={"{\"a\":1}","{\"a\":2}"}'::jsonb[], NULL, '[3:4]={k,NULL}'::text[])`).Scan(&ids); err != nil || len(ids) != 2 {
		t.Fatalf("shifted bounds: %v, %v", ids, err)
	}
	var key *string
	var input string
	if err := s.db.Pool.QueryRow(ctx, `SELECT r.idempotency_key, e.payload->>'input' FROM ledger.request_status r
		JOIN ledger.events e ON e.stream = 'request:' || r.id WHERE r.id = $1`, ids[0]).Scan(&key, &input); err != nil ||
		deref(key) != "k" || input != `{"a": 1}` {
		t.Errorf("first element: key %s, input %s, %v", deref(key), input, err)
	}

	// The login role decides the principal, as for submit.
	db := s.db
	unmapped := db.LoginRole(t, "", "ledger_submitter")
	_, err := unmapped.Pool.Exec(ctx, `SELECT ledger.submit_many(ARRAY['echo'], ARRAY['{}']::jsonb[])`)
	if code := pgCode(err); code != "42501" || !strings.Contains(err.Error(), "not mapped to a principal") {
		t.Errorf("unmapped role: %v", err)
	}
	outsider := db.LoginRole(t, "mallory")
	if _, err := outsider.Pool.Exec(ctx, `SELECT ledger.submit_many(ARRAY['echo'], ARRAY['{}']::jsonb[])`); pgCode(err) != "42501" {
		t.Errorf("role without ledger_submitter: %v", err)
	}
	// An admin may call it.
	if _, err := SubmitMany(ctx, db.Pool, []SubmitParams{{Tool: "echo", Input: map[string]any{}}}); err != nil {
		t.Errorf("admin: %v", err)
	}
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// TestSubmitManyIdempotencyAndRowSecurity: keys are the principal's own,
// a used key returns its request, a key repeated in the call its first
// element's, another tool, input or run under a key is refused with
// nothing written, and each principal sees only its own rows.
func TestSubmitManyIdempotencyAndRowSecurity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	first, err := Submit(ctx, s.aliceRole.Pool, SubmitParams{Tool: "echo", Input: map[string]any{"n": 1}, IdempotencyKey: "used", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	ps := []SubmitParams{
		{Tool: "echo", Input: map[string]any{"n": 2}, IdempotencyKey: "new"},
		{Tool: "echo", Input: map[string]any{"n": 1}, IdempotencyKey: "used", RunID: "r"},
		{Tool: "echo", Input: map[string]any{"n": 2}, IdempotencyKey: "new"},
		{Tool: "echo", Input: map[string]any{"n": 3}},
		{Tool: "echo", Input: map[string]any{"n": 3}},
	}
	ids, err := SubmitMany(ctx, s.aliceRole.Pool, ps)
	if err != nil {
		t.Fatal(err)
	}
	if ids[1] != first || ids[2] != ids[0] || ids[0] == first || ids[3] == ids[4] {
		t.Errorf("ids %v (first %s)", ids, first)
	}
	if n := countRows(t, s.db, "ledger.events"); n != 4 {
		t.Errorf("%d events, want 4", n)
	}
	// A retry of the whole call returns the same ids for the keyed ones.
	again, err := SubmitMany(ctx, s.aliceRole.Pool, ps[:3])
	if err != nil || !slices.Equal(again, ids[:3]) {
		t.Errorf("retry: %v, %v; want %v", again, err, ids[:3])
	}
	// Bob's "used" is his own.
	bobs, err := SubmitMany(ctx, s.db.LoginRole(t, "bob", "ledger_submitter").Pool, ps[1:2])
	if err != nil || bobs[0] == first {
		t.Errorf("bob: %v, %v", bobs, err)
	}
	before := countRows(t, s.db, "ledger.events")
	for _, tc := range []struct {
		name string
		ps   []SubmitParams
		msg  string
	}{
		{"another input under a used key", []SubmitParams{ps[3], {Tool: "echo", Input: map[string]any{"n": 9}, IdempotencyKey: "used", RunID: "r"}},
			"idempotency key 'used' already names request " + first.String()},
		{"another run under a used key", []SubmitParams{{Tool: "echo", Input: map[string]any{"n": 1}, IdempotencyKey: "used"}},
			"idempotency key 'used' already names request " + first.String()},
		{"another tool under a key of the call", []SubmitParams{ps[3], {Tool: "echo", Input: map[string]any{}, IdempotencyKey: "fresh"},
			{Tool: "other", Input: map[string]any{}, IdempotencyKey: "fresh"}},
			"idempotency key 'fresh' already names element 2 of this call"},
	} {
		_, err := SubmitMany(ctx, s.aliceRole.Pool, tc.ps)
		var elem *SubmitManyError
		if !errors.As(err, &elem) || elem.Index != len(tc.ps)-1 || !errors.Is(err, ErrIdempotencyConflict) ||
			!strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if n := countRows(t, s.db, "ledger.events"); n != before {
		t.Errorf("%d events after refused calls, want %d", n, before)
	}
	// Row security: alice sees her rows only.
	var seen int
	if err := s.aliceRole.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.requests WHERE id = ANY($1)`, append(ids, bobs...)).Scan(&seen); err != nil || seen != 4 {
		t.Errorf("alice sees %d of her 4 requests and bob's 1: %v", seen, err)
	}
	var principals []string
	if err := s.db.Pool.QueryRow(ctx, `SELECT array_agg(DISTINCT principal) FROM ledger.request_status WHERE id = ANY($1)`, ids).Scan(&principals); err != nil ||
		!slices.Equal(principals, []string{"alice"}) {
		t.Errorf("principals %v, %v", principals, err)
	}
}

// TestSubmitManyConcurrentKeys: calls sharing keys in different orders,
// submit_many's and submit's, wait for each other (no deadlock), and each
// key names one request.
func TestSubmitManyConcurrentKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	const callers = 8
	results := make([][]uuid.UUID, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			ps := make([]SubmitParams, len(keys))
			for i := range keys {
				k := keys[(i+c)%len(keys)] // another order per caller: rotated,
				if c%2 == 1 {              // and reversed for every other
					k = keys[(len(keys)-1-i+c)%len(keys)]
				}
				ps[i] = SubmitParams{Tool: "echo", Input: map[string]any{"key": k}, IdempotencyKey: k}
			}
			var ids []uuid.UUID
			var err error
			if c%4 == 3 { // and some submit the same keys one by one
				for _, p := range ps {
					var id uuid.UUID
					if id, err = Submit(ctx, s.aliceRole.Pool, p); err != nil {
						break
					}
					ids = append(ids, id)
				}
			} else {
				ids, err = SubmitMany(ctx, s.aliceRole.Pool, ps)
			}
			errs[c] = err
			if err == nil {
				// In the order of keys, to compare across callers.
				byKey := map[string]uuid.UUID{}
				for i, p := range ps {
					byKey[p.IdempotencyKey] = ids[i]
				}
				for _, k := range keys {
					results[c] = append(results[c], byKey[k])
				}
			}
		})
	}
	wg.Wait()
	for c := range callers {
		if errs[c] != nil {
			t.Fatalf("caller %d: %v", c, errs[c])
		}
		if !slices.Equal(results[c], results[0]) {
			t.Errorf("caller %d: %v; caller 0: %v", c, results[c], results[0])
		}
	}
	if n := countRows(t, s.db, "ledger.request_status"); n != len(keys) {
		t.Errorf("%d requests, want %d", n, len(keys))
	}
}

// TestSubmitManyWakesWaitingExecutors: one call takes the waiting
// executors' registrations, as one submit does.
func TestSubmitManyWakesWaitingExecutors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	if _, err := s.db.Pool.Exec(ctx, `INSERT INTO ledger.queue_waiters (executor) VALUES ('x'), ('y')`); err != nil {
		t.Fatal(err)
	}
	if _, err := SubmitMany(ctx, s.aliceRole.Pool, []SubmitParams{{Tool: "echo", Input: map[string]any{}}, {Tool: "echo", Input: map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s.db, "ledger.queue_waiters"); n != 0 {
		t.Errorf("%d executors still registered after submit_many", n)
	}
	if n := countRows(t, s.db, "ledger.queue"); n != 2 {
		t.Errorf("%d queue rows, want 2", n)
	}
}
