package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/migrations"
)

// emptyDatabaseURL creates a database with nothing in it, dropped when t
// ends, and returns its URL as the server's superuser.
func emptyDatabaseURL(t *testing.T) string { return testdb.EmptyURL(t) }

// schemaCheckedCommands are commands that connect, one of each kind: a
// submitter's, an approver's, the readers', an auditor's, an
// administrator's. Each must refuse a database of another schema with
// the same words as serve, before it touches a table.
var schemaCheckedCommands = [][]string{
	{"submit", "echo", `{"text":"hi"}`},
	{"status", "0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80"},
	{"requests", "list"},
	{"cancel", "0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80"},
	{"approve", "0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80"},
	{"audit"},
	{"export", "--out", "x.bundle"},
	{"prove", "0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80"},
	{"projector", "status"},
	{"skill", "list"},
	{"skill", "trust", "list"},
	{"mcp", "token", "list"},
}

// TestEveryCommandChecksTheSchema: on a database never migrated, one at
// an older and one at a newer schema version, every command says which
// version it found and which it needs, as serve does, instead of
// `schema "ledger" does not exist`; migrate itself still runs.
func TestEveryCommandChecksTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := migrations.Inspect(ctx, testdb.New(t).Pool)
	if err != nil || !st.UpToDate() {
		t.Fatalf("Inspect of a migrated database: %+v, %v", st, err)
	}
	latest := strconv.Itoa(int(st.Latest))

	empty := emptyDatabaseURL(t)
	old := testdb.New(t)
	if _, err := old.Pool.Exec(ctx, "UPDATE public.execledger_schema_version SET version = 1"); err != nil {
		t.Fatal(err)
	}
	newer := testdb.New(t)
	if _, err := newer.Pool.Exec(ctx, "UPDATE public.execledger_schema_version SET version = version + 3"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"unmigrated", empty, []string{"no execledger schema (version 0), this binary needs version " + latest, "run `execledger migrate`"}},
		{"older", old.URL, []string{"schema is at version 1, this binary needs " + latest, "run `execledger migrate`"}},
		{"newer", newer.URL, []string{"at version " + strconv.Itoa(int(st.Latest)+3) + ", newer than this binary knows (" + latest, "a newer one"}},
	} {
		for _, args := range schemaCheckedCommands {
			r := execute(t, []string{"DATABASE_URL=" + tc.url}, "", args...)
			if r.code != exitError || strings.Contains(r.stderr, "SQLSTATE") || strings.Contains(r.stderr, "usage:") {
				t.Errorf("%s: %v: %+v", tc.name, args, r)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("%s: %v: stderr %q lacks %q", tc.name, args, r.stderr, w)
				}
			}
		}
	}
	// serve says the same.
	r := execute(t, append([]string{"DATABASE_URL=" + empty, "EXECLEDGER_SERVE_LISTEN=127.0.0.1:0"}, serviceFiles(t)...), "", "serve")
	if r.code != exitError || !strings.Contains(r.stderr, "no execledger schema (version 0)") {
		t.Errorf("serve on an unmigrated database: %+v", r)
	}
	// The checks wrote nothing (ReadStatus, serve's check once, created
	// tern's version table).
	conn, err := pgx.Connect(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	var created bool
	err = conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", migrations.VersionTable).Scan(&created)
	conn.Close(ctx)
	if err != nil || created {
		t.Errorf("a check created %s (%v)", migrations.VersionTable, err)
	}
	// A definition that differs is named too, by a client as by serve.
	if _, err := old.Pool.Exec(ctx, "UPDATE public.execledger_schema_version SET version = $1", st.Latest); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Pool.Exec(ctx, "UPDATE public.execledger_definitions SET sha256 = 'x' WHERE name = 'api/cancel.sql'"); err != nil {
		t.Fatal(err)
	}
	if r := execute(t, []string{"DATABASE_URL=" + old.URL}, "", "requests", "list"); r.code != exitError ||
		!strings.Contains(r.stderr, "1 of the database's definitions differ from this binary's (api/cancel.sql, …): run `execledger migrate`") {
		t.Errorf("requests list with a changed definition: %+v", r)
	}
	// migrate finds the empty database empty and migrates it.
	if r := execute(t, []string{"DATABASE_URL=" + empty}, "", "migrate", "--status"); r.code != exitNotOK || !strings.Contains(r.stdout, "schema version 0 of "+latest) {
		t.Errorf("migrate --status on the empty database: %+v", r)
	}
	if r := execute(t, []string{"DATABASE_URL=" + empty}, "", "migrate"); r.code != exitOK {
		t.Fatalf("migrate: %+v", r)
	}
	if r := execute(t, []string{"DATABASE_URL=" + empty}, "", "requests", "list"); r.code != exitOK {
		t.Errorf("requests list after migrate: %+v", r)
	}
}
