package processrun

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

var _ Recorder = (*ledger.Processes)(nil)

// TestProcessesRebuildEqualsLive drives background processes to every end
// the tier records — stopped, lifetime expired, run ended, orphaned, lost,
// executor shutdown — and one still running, and checks that
// ledger.processes rebuilt from the log, in one batch and one event at a
// time, is the live table, every column.
func TestProcessesRebuildEqualsLive(t *testing.T) {
	t.Parallel()
	e := newBackgroundTool(t, "B", procinput.Policy{AllowedExecutables: []string{"sleep"}, AllowDetached: true})
	ctx := context.Background()

	stopped := startBackground(t, e, "r-stop", `{"command":"sleep","args":["3701"],"background":true}`)
	if s, res := status(t, e, e.tool.StopTool(), "alice", "r-stop", stopped.Handle); s.State != "ended" {
		t.Fatalf("stop: %+v", res)
	}
	expiring := startBackground(t, e, "r-life", `{"command":"sleep","args":["3702"],"background":{"lifetime_ms":600}}`)
	owned := startBackground(t, e, "r-end", `{"command":"sleep","args":["3703"],"background":true}`)
	if _, err := e.alice.Pool.Exec(ctx, "SELECT ledger.end_run('r-end')"); err != nil {
		t.Fatal(err)
	}
	startBackground(t, e, "r-live", `{"command":"sleep","args":["3704"],"background":{"mode":"detached","lifetime_ms":60000}}`)
	waitEnded(t, e, "r-life", expiring.Handle)
	waitEnded(t, e, "r-end", owned.Handle)
	plantOrphans(t, e, "3705")
	// A second executor of this login accounts for the orphans as it starts.
	newTool(t, "B", procinput.Policy{}, func(c *Config) { c.Background = BackgroundConfig{Recorder: ledger.NewProcesses(e.exec.Pool)} })

	wantEnds(t, e.db, "ended:lifetime_expired", "ended:orphaned", "ended:run_ended", "ended:stopped", "lost:lost", "running:")
	checkRebuild(t, e.db)

	closeCtx, cancel := context.WithTimeout(ctx, waitLong)
	defer cancel()
	if err := e.tool.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	wantEnds(t, e.db, "ended:executor_shutdown", "ended:lifetime_expired", "ended:orphaned", "ended:run_ended", "ended:stopped", "lost:lost")
	checkRebuild(t, e.db)
}

// plantOrphans records, through the ledger like any executor, two
// processes of a dead executor on this host: one whose process still runs
// (a sleep with marker) and one whose process is gone.
func plantOrphans(t *testing.T, e *bgEnv, marker string) {
	t.Helper()
	ctx := context.Background()
	me, err := selfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", marker)
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orphan.Process.Kill(); _ = orphan.Wait() })
	orphanStart, err := pidStart(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// The dead executor: the exited process, with a start time no process
	// has.
	owner := identity{host: me.host, boot: me.boot, pid: gone.Process.Pid, start: 1}
	call := e.callAs(t, "alice", "r-orphans", "{}")
	rec := ledger.NewProcesses(e.exec.Pool)
	for _, p := range []struct {
		pid   int
		start uint64
	}{{orphan.Process.Pid, orphanStart}, {gone.Process.Pid, 1}} {
		now := time.Now()
		err := rec.Start(ctx, ledger.ProcessStarted{Handle: uuid.Must(uuid.NewV7()), RequestID: call.RequestID, Principal: "alice",
			RunID: "r-orphans", Mode: procinput.BackgroundRunOwned, Tier: "B", Executor: "process", Command: "sleep",
			Args: []string{marker}, PID: p.pid, PIDStart: p.start, Owner: owner.String(), StartedAt: now,
			ExpiresAt: now.Add(time.Hour), LifetimeMS: time.Hour.Milliseconds()}, ledger.Metadata{Actor: owner.String()})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// wantEnds checks the live rows' states and end reasons.
func wantEnds(t *testing.T, db *testdb.DB, want ...string) {
	t.Helper()
	var got []string
	err := db.Pool.QueryRow(context.Background(),
		`SELECT array_agg(s ORDER BY s COLLATE "C") FROM (SELECT state || ':' || coalesce(end_reason, '') AS s FROM ledger.processes) p`).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("processes: %v, want %v", got, want)
	}
}

// checkRebuild rebuilds ledger.processes from the whole log into a
// temporary table, once in a single batch and once an event at a time,
// and fails on any row that is not the same in both tables. It also
// checks that the comparison sees a changed column.
func checkRebuild(t *testing.T, db *testdb.DB) {
	t.Helper()
	for _, oneByOne := range []bool{false, true} {
		diff := rebuildDiff(t, db, oneByOne, "")
		if len(diff) > 0 {
			t.Fatalf("rebuilt (one event at a time: %v) differs from live:\n%s", oneByOne, strings.Join(diff, "\n"))
		}
	}
	if diff := rebuildDiff(t, db, false, "UPDATE pg_temp.processes SET signal = 99 WHERE handle = (SELECT handle FROM pg_temp.processes ORDER BY handle LIMIT 1)"); len(diff) != 2 {
		t.Fatalf("a changed signal shows as %d differing rows, want 2: %v", len(diff), diff)
	}
	// execledger projector verify, which puts its scratch tables first on
	// search_path, agrees.
	checks, err := projector.Verify(context.Background(), db.Pool, "processes")
	if err != nil || len(checks) != 1 || !checks[0].OK() {
		t.Fatalf("projector verify processes: %+v, %v", checks, err)
	}
}

// rebuildDiff applies ledger.apply_processes to the whole log, as the
// superuser with pg_temp first on search_path, then runs tamper (if any)
// and returns the rows that are in only one of the live and rebuilt
// tables.
func rebuildDiff(t *testing.T, db *testdb.DB, oneByOne bool, tamper string) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, q := range []string{
		`SET LOCAL search_path = pg_catalog, pg_temp, ledger`,
		`CREATE TEMP TABLE processes (LIKE ledger.processes INCLUDING ALL) ON COMMIT DROP`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if oneByOne {
		applyEach(t, tx)
	} else if _, err := tx.Exec(ctx, `SELECT ledger.apply_processes('0', 0, max(tx_id), max(position)) FROM ledger.events`); err != nil {
		t.Fatal(err)
	}
	if tamper != "" {
		if _, err := tx.Exec(ctx, tamper); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT 'live only:    ' || l::text FROM (TABLE ledger.processes EXCEPT TABLE pg_temp.processes) l
UNION ALL
SELECT 'rebuilt only: ' || r::text FROM (TABLE pg_temp.processes EXCEPT TABLE ledger.processes) r`)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return diff
}

// applyEach applies the log one event at a time, in read_all's order.
func applyEach(t *testing.T, tx pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	rows, err := tx.Query(ctx, `SELECT tx_id::text, position FROM ledger.events ORDER BY tx_id, position`)
	if err != nil {
		t.Fatal(err)
	}
	type cursor struct {
		tx  string
		pos int64
	}
	cursors, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cursor, error) {
		var c cursor
		return c, r.Scan(&c.tx, &c.pos)
	})
	if err != nil {
		t.Fatal(err)
	}
	from := cursor{"0", 0}
	for _, to := range cursors {
		if _, err := tx.Exec(ctx, `SELECT ledger.apply_processes($1::xid8, $2, $3::xid8, $4)`, from.tx, from.pos, to.tx, to.pos); err != nil {
			t.Fatal(err)
		}
		from = to
	}
}

// TestProcessWritersDeriveTheRowFromTheEvents: what ledger.process_start
// and process_record are given besides the events must agree with them,
// and the owner_role a process.started carries is the caller's login
// role, whatever the payload said.
func TestProcessWritersDeriveTheRowFromTheEvents(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	db.ForgesEvents() // events of its own making, to see what the row derives
	execRole := db.LoginRole(t, "", "ledger_executor")
	e := &bgEnv{db: db, exec: execRole}
	ctx := context.Background()
	call := e.callAs(t, "alice", "r", "{}")
	now := time.Now().UTC().Truncate(time.Microsecond)
	started := ledger.ProcessStarted{Handle: uuid.Must(uuid.NewV7()), RequestID: call.RequestID, Principal: "alice", RunID: "r",
		Mode: procinput.BackgroundRunOwned, Tier: "B", Command: "sleep", PID: 1, PIDStart: 2, Owner: "h/b/3/4",
		StartedAt: now, ExpiresAt: now.Add(time.Minute)}
	payload, err := json.Marshal(started)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(payload), "{", `{"owner_role":"postgres",`, 1)
	invalid := func(what string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22023" {
			t.Errorf("%s: %v, want SQLSTATE 22023", what, err)
		}
	}
	const start = `SELECT ledger.process_start($1, $2, 'run_owned', 'B', $3, 'h/b/3/4', 1, 2, $4, $5, $6, '{}')`
	_, err = execRole.Pool.Exec(ctx, start, started.Handle, call.RequestID, "sh", started.StartedAt, started.ExpiresAt, forged)
	invalid("a command the event does not say", err)
	_, err = execRole.Pool.Exec(ctx, start, started.Handle, call.RequestID, "sleep", started.StartedAt.Add(time.Microsecond), started.ExpiresAt, forged)
	invalid("a start the event does not say", err)
	if _, err := execRole.Pool.Exec(ctx, start, started.Handle, call.RequestID, "sleep", started.StartedAt, started.ExpiresAt, forged); err != nil {
		t.Fatal(err)
	}
	var inEvent, inRow string
	if err := db.Pool.QueryRow(ctx, `SELECT e.payload ->> 'owner_role', p.owner_role FROM ledger.events e
JOIN ledger.processes p ON 'process:' || p.handle = e.stream WHERE p.handle = $1`, started.Handle).Scan(&inEvent, &inRow); err != nil {
		t.Fatal(err)
	}
	if inEvent != execRole.Name || inRow != execRole.Name {
		t.Fatalf("owner_role %q in the event, %q in the row; want %q", inEvent, inRow, execRole.Name)
	}

	const record = `SELECT ledger.process_record($1, $2, $3, ARRAY['{}'], NULL, $4, $5)`
	ended := `{"handle":"` + started.Handle.String() + `","end_reason":"exited","exit_code":0,"signal":0}`
	for _, c := range []struct {
		what, typ, payload string
		state, reason      *string
	}{
		{"an end without its event", "egress.connection", `{}`, new("ended"), nil},
		{"an end of another kind than its event", "process.lost", ended, new("ended"), nil},
		{"an end reason its event does not say", "process.ended", ended, new("ended"), new("stopped")},
		{"an end reason without an end", "egress.connection", `{}`, nil, new("stopped")},
	} {
		_, err := execRole.Pool.Exec(ctx, record, started.Handle, []string{c.typ}, []string{c.payload}, c.state, c.reason)
		invalid(c.what, err)
	}
	// The first end wins, in one call and after it.
	const recordMany = `SELECT ledger.process_record($1, $2, $3, array_fill('{}'::text, ARRAY[cardinality($2::text[])]), NULL, $4, $5)`
	lost := `{"handle":"` + started.Handle.String() + `","end_reason":"lost"}`
	if _, err := execRole.Pool.Exec(ctx, recordMany, started.Handle, []string{"egress.connection", "process.ended", "process.lost"},
		[]string{`{}`, ended, lost}, "ended", "exited"); err != nil {
		t.Fatal(err)
	}
	if _, err := execRole.Pool.Exec(ctx, recordMany, started.Handle, []string{"process.lost"}, []string{lost}, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantEnds(t, db, "ended:exited")
	checkRebuild(t, db)
}
