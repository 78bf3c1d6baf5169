package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/migrations"
)

// TestProcessesUpgrade: background processes recorded by migration 6's
// functions (their process.started without owner_role, their times the
// functions' clock) are, after migration 9, rows the processes projection
// rebuilds exactly from the log, still recordable by the login that
// started them.
func TestProcessesUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := emptyDatabase(t)
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(migrations.Files()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 8); err != nil {
		t.Fatal(err)
	}

	// As migration 6's functions record them: the superuser is the
	// executor login here, holding the request's claim.
	req := uuid.New()
	for _, q := range []string{
		`INSERT INTO ledger.request_status (id, principal, tool, run_id, input_digest, state) VALUES ($1, 'alice', 'process.run', 'r', '\x00', 'running')`,
		`INSERT INTO ledger.queue (id, state, claimed_by, claimed_role, claim_id, started_at, lease_expires_at)
VALUES ($1, 'running', 'test', session_user, gen_random_uuid(), now(), now() + interval '1 hour')`,
	} {
		if _, err := conn.Exec(ctx, q, req); err != nil {
			t.Fatal(err)
		}
	}
	running, ended := uuid.New(), uuid.New()
	for _, h := range []uuid.UUID{running, ended} {
		if _, err := conn.Exec(ctx, `SELECT ledger.process_start($1::uuid, $2::uuid, 'run_owned', 'B', 'sleep', 'h/b/1/2', 3, 4,
    '2026-01-02T03:04:05.123456Z', '2026-01-02T04:04:05.123456Z',
    json_build_object('handle', $1::uuid, 'request_id', $2::uuid, 'principal', 'alice', 'run_id', 'r', 'mode', 'run_owned',
        'tier', 'B', 'command', 'sleep', 'owner', 'h/b/1/2', 'pid', 3, 'pid_start', 4,
        'started_at', '2026-01-02T03:04:05.123456Z', 'expires_at', '2026-01-02T04:04:05.123456Z')::text, '{}')`, h, req); err != nil {
			t.Fatal(err)
		}
	}
	endedPayload := `{"handle":"` + ended.String() + `","end_reason":"stopped","exit_code":-1,"signal":15}`
	if _, err := conn.Exec(ctx, `SELECT ledger.process_record($1, ARRAY['process.stop_requested', 'process.ended'], ARRAY['{}', $2], ARRAY['{}', '{}'],
    $3, 'ended', 'stopped', -1, 15, $2::jsonb)`, ended, endedPayload, req); err != nil {
		t.Fatal(err)
	}

	if err := m.MigrateTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	var recorded []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(payload ->> 'owner_role' ORDER BY stream) FROM ledger.events
WHERE type = 'process.owner_role_recorded'`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	var role string
	if err := conn.QueryRow(ctx, `SELECT session_user`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recorded, []string{role, role}) {
		t.Fatalf("owner roles recorded: %v, want the login's (%s) on both streams", recorded, role)
	}
	wantRebuilt(t, conn)
	// The login that started the running one still records its end.
	if _, err := conn.Exec(ctx, `SELECT ledger.process_record($1, ARRAY['process.lost'], ARRAY[$2], ARRAY['{}'])`,
		running, `{"handle":"`+running.String()+`","end_reason":"lost"}`); err != nil {
		t.Fatal(err)
	}
	var states []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(state || ':' || end_reason || ':' || owner_role ORDER BY handle = $1)
FROM ledger.processes`, running).Scan(&states); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ended:stopped:" + role, "lost:lost:" + role}; !slices.Equal(states, want) {
		t.Fatalf("processes %v, want %v", states, want)
	}
	wantRebuilt(t, conn)
}

// emptyDatabase creates a database with nothing in it, dropped when t
// ends, and connects to it as the server's superuser.
func emptyDatabase(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	u := testdb.EmptyURL(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return conn
}

// wantRebuilt fails unless ledger.processes rebuilt from the whole log is
// the live table.
func wantRebuilt(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var live, differ int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM ledger.processes`).Scan(&live)
	for _, q := range []string{
		`SET LOCAL search_path = pg_catalog, pg_temp, ledger`,
		`CREATE TEMP TABLE processes (LIKE ledger.processes INCLUDING ALL) ON COMMIT DROP`,
		`SELECT ledger.apply_processes('0', 0, max(tx_id), max(position)) FROM ledger.events`,
	} {
		if err == nil {
			_, err = tx.Exec(ctx, q)
		}
	}
	if err == nil {
		err = tx.QueryRow(ctx, `SELECT count(*) FROM ((TABLE ledger.processes EXCEPT TABLE pg_temp.processes)
    UNION ALL (TABLE pg_temp.processes EXCEPT TABLE ledger.processes)) d`).Scan(&differ)
	}
	if err != nil {
		t.Fatal(err)
	}
	if live != 2 || differ != 0 {
		t.Fatalf("%d live rows, %d rows differ from the rebuilt table", live, differ)
	}
}
