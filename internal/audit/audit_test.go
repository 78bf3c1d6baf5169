package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/testdb"
)

// seed writes rows of ledger.audit_trail as the superuser: each "kind
// position principal decision minutes-ago", decision "-" for an outcome.
func seed(t *testing.T, db *testdb.DB, rows ...string) {
	t.Helper()
	for _, r := range rows {
		var kind, principal, decision string
		var position, ago int
		if _, err := fmt.Sscan(r, &kind, &position, &principal, &decision, &ago); err != nil {
			t.Fatalf("seed %q: %v", r, err)
		}
		var d, state *string
		if kind == "decision" {
			d = &decision
		} else {
			s := "succeeded"
			state = &s
		}
		if _, err := db.Pool.Exec(context.Background(), `INSERT INTO ledger.audit_trail
			(position, tx_id, recorded_at, kind, event_type, request_id, principal, tool, decision, state, request_position)
			VALUES ($1, '1', date_trunc('minute', now()) - make_interval(mins => $2), $3, 'policy.decided', $4, $5, 'echo', $6, $7, $1)`,
			position, ago, kind, uuid.New(), principal, d, state); err != nil {
			t.Fatalf("seed %q: %v", r, err)
		}
	}
}

// ids are rows as "kind/position".
func ids(rows []Row) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s/%d", r.Kind, r.Position))
	}
	return out
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func all(t *testing.T, db *testdb.Role, f Filter) []Row {
	t.Helper()
	var rows []Row
	if _, err := Each(context.Background(), db.Pool, f, func(r Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestPagesByCursor: paging by the cursor a page returns, through its
// text, reads every row once in the trail's order, also where rows share
// a time or a position; filters and row security hold on every page.
func TestPagesByCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	seed(t, db,
		"decision 1 alice allow 50", "outcome 2 alice - 49",
		"decision 3 bob deny 40", "outcome 3 bob - 40", // one event, both kinds
		"decision 5 alice deny 30", "decision 4 alice allow 30", // one time, out of position order
		"outcome 6 alice - 20", "decision 7 bob allow 10")
	auditor := db.LoginRole(t, "", "ledger_auditor")
	want := []string{"decision/1", "outcome/2", "decision/3", "outcome/3", "decision/4", "decision/5", "outcome/6", "decision/7"}
	if got := ids(all(t, auditor, Filter{})); !slices.Equal(got, want) {
		t.Fatalf("every row: %v, want %v", got, want)
	}

	page := func(who *testdb.Role, f Filter) (got []string, pages int) {
		t.Helper()
		for {
			rows, next, err := Page(ctx, who.Pool, f)
			if err != nil || len(rows) > f.Limit || next != nil && len(rows) != f.Limit {
				t.Fatalf("page %d of %+v: %d rows, next %v, %v", pages, f, len(rows), next, err)
			}
			got, pages = append(got, ids(rows)...), pages+1
			if next == nil {
				return got, pages
			}
			c, err := ParseCursor(next.String())
			if err != nil || c.Position != next.Position || c.Kind != next.Kind || !c.RecordedAt.Equal(next.RecordedAt) {
				t.Fatalf("cursor %v through its text: %+v, %v", next, c, err)
			}
			f.After = &c
		}
	}
	for _, tc := range []struct {
		who   *testdb.Role
		f     Filter
		want  []string
		pages int
	}{
		{auditor, Filter{Limit: 2}, want, 4},
		{auditor, Filter{Limit: 3}, want, 3},
		{auditor, Filter{Limit: 8}, want, 1},
		{auditor, Filter{Limit: 2, Decision: "deny"}, []string{"decision/3", "decision/5"}, 1},
		{auditor, Filter{Limit: 1, Principal: "bob"}, []string{"decision/3", "outcome/3", "decision/7"}, 3},
		{auditor, Filter{Limit: 2, Since: time.Now().Add(-45 * time.Minute), Until: time.Now().Add(-15 * time.Minute)},
			[]string{"decision/3", "outcome/3", "decision/4", "decision/5", "outcome/6"}, 3},
		{db.LoginRole(t, "alice", "ledger_submitter"), Filter{Limit: 2}, []string{"decision/1", "outcome/2", "decision/4", "decision/5", "outcome/6"}, 3},
		// Newest first (the console's pages): the trail's order reversed.
		{auditor, Filter{Limit: 3, Newest: true}, reversed(want), 3},
		{auditor, Filter{Limit: 1, Newest: true, Kind: "outcome"}, []string{"outcome/6", "outcome/3", "outcome/2"}, 3},
		{auditor, Filter{Limit: 2, Newest: true, Kind: "decision", Principal: "alice"}, []string{"decision/5", "decision/4", "decision/1"}, 2},
	} {
		if got, pages := page(tc.who, tc.f); !slices.Equal(got, tc.want) || pages != tc.pages {
			t.Errorf("%+v: %v in %d pages, want %v in %d", tc.f, got, pages, tc.want, tc.pages)
		}
	}
}

func TestParseCursor(t *testing.T) {
	t.Parallel()
	c := Cursor{RecordedAt: time.Date(2026, 11, 29, 3, 0, 0, 123456000, time.UTC), Position: 42, Kind: "outcome"}
	if got, err := ParseCursor(c.String()); err != nil || got != c {
		t.Fatalf("%s: %+v, %v", c, got, err)
	}
	for _, s := range []string{"", "1.2", "1.2.3.4", "x.2.decision", "1.x.decision", "1.-2.decision", "1.2.other", "1.2.decision;drop"} {
		if _, err := ParseCursor(s); !errors.Is(err, errBadCursor) {
			t.Errorf("ParseCursor(%q): %v", s, err)
		}
	}
}

// TestQueryUsesThePrincipalTimeIndex: a principal and time range, on its
// first page and after a cursor, is a scan of
// audit_trail_principal_time_idx with no statistics at all (autovacuum
// off, never analyzed, as in CI), for an auditor and for a submitter
// under row security.
func TestQueryUsesThePrincipalTimeIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, q := range []string{
		"ALTER TABLE ledger.audit_trail SET (autovacuum_enabled = false)",
		`INSERT INTO ledger.audit_trail (position, tx_id, recorded_at, kind, event_type, request_id, principal, tool, request_position)
		 SELECT i, '1', now() - make_interval(mins => i), 'decision', 'policy.decided', gen_random_uuid(), 'p' || (i % 50), 'echo', i
		 FROM generate_series(1, 20000) AS i`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var reltuples float64
	if err := db.Pool.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = 'ledger.audit_trail'::regclass").Scan(&reltuples); err != nil || reltuples != -1 {
		t.Fatalf("audit_trail has statistics (reltuples %v, %v): the test means none", reltuples, err)
	}
	now := time.Now()
	f := Filter{Principal: "p7", Since: now.Add(-48 * time.Hour), Until: now.Add(-24 * time.Hour), Limit: 1000}
	after := f
	after.After = &Cursor{RecordedAt: now.Add(-36 * time.Hour), Position: 2000, Kind: "decision"}
	for _, f := range []Filter{f, after} {
		q, args := Query(f)
		for _, who := range []*testdb.Role{db.LoginRole(t, "", "ledger_auditor"), db.LoginRole(t, "p7", "ledger_submitter")} {
			var plan string
			if err := who.Pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q, args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(plan, `"Index Name": "audit_trail_principal_time_idx"`) || strings.Contains(plan, `"Seq Scan"`) {
				t.Errorf("plan of %s:\n%s", q, plan)
			}
		}
	}
}
