package executor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// planLog collects the plans auto_explain sends a session as notices.
type planLog struct {
	mu    sync.Mutex
	plans []string
}

func (p *planLog) notice(_ *pgconn.PgConn, n *pgconn.Notice) {
	if strings.Contains(n.Message, "plan:") {
		p.mu.Lock()
		p.plans = append(p.plans, n.Message)
		p.mu.Unlock()
	}
}

func (p *planLog) reset() {
	p.mu.Lock()
	p.plans = nil
	p.mu.Unlock()
}

// scans returns the plans that read one of tables whole (a sequential
// scan; a hashed subplan over a table needs one too), and how many plans
// there are: the executor's sessions keep adding them meanwhile.
func (p *planLog) scans(tables ...string) (bad []string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	re := regexp.MustCompile(`Seq Scan on (` + strings.Join(tables, "|") + `)\b`)
	for _, plan := range p.plans {
		if re.MatchString(plan) || fullIndexScan(plan, tables) {
			bad = append(bad, plan)
		}
	}
	return bad, len(p.plans)
}

// probeless lists the indexes a plan may walk without an Index Cond: a
// partial index of the few rows a hot statement looks for.
var probeless = map[string]bool{"request_status_unattested_idx": true}

// leading names the first column of the multi-column indexes of the log
// and the request table: an Index Cond that does not bound it walks the
// whole index all the same (a plan kept from an empty ledger probed
// events_pkey by version = 1 alone, every stream's first event, at each claim).
// Since 024 the log's partitions carry their own: events_N_stream_idx
// and events_N_delivery_idx (events_0 keeps events_pkey).
func leading(index string) string {
	switch {
	case regexp.MustCompile(`^events(?:_[0-9]+|_default)?_delivery_idx$`).MatchString(index):
		return "tx_id"
	case index == "events_pkey", regexp.MustCompile(`^events(?:_[0-9]+|_default)_stream_idx$`).MatchString(index):
		return "stream"
	}
	return ""
}

// fullIndexScan reports whether plan walks an index of one of tables
// without an Index Cond: a whole index read, which grows with the table
// as a sequential scan does (a partial index whose predicate a join's
// filter implies, kept from when the table was empty, did so, 020-021).
func fullIndexScan(plan string, tables []string) bool {
	node := regexp.MustCompile(`^(\s*)(?:->\s+)?(?:(?:Index|Index Only) Scan(?: Backward)? using (\S+) on (?:` + strings.Join(tables, "|") + `)\b|Bitmap Index Scan on (\S+))`)
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		m := node.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		index := m[2] + m[3]
		if probeless[index] || (m[3] != "" && leading(index) == "") {
			continue
		}
		probe := false
		for _, next := range lines[i+1:] {
			if strings.Contains(next, "->") || strings.TrimSpace(next) == "" {
				break
			}
			if _, cond, ok := strings.Cut(next, "Index Cond:"); ok {
				col := leading(index)
				probe = col == "" || regexp.MustCompile(`\b`+col+`\b`).MatchString(cond)
				break
			}
		}
		if !probe {
			return true
		}
	}
	return false
}

// explainedPool connects as role with auto_explain sending every
// statement's plan, nested ones included, to the session as a notice.
func explainedPool(t *testing.T, db *testdb.DB, role *testdb.Role, log *planLog) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	for _, set := range []string{"session_preload_libraries = 'auto_explain'", "auto_explain.log_min_duration = 0",
		"auto_explain.log_nested_statements = on", "auto_explain.log_level = notice", "client_min_messages = notice"} {
		if _, err := db.Pool.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role.Name}.Sanitize()+" SET "+set); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := pgxpool.ParseConfig(role.URL)
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.OnNotice = log.notice
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestHotPlansIgnoreStatistics: the statements of submit, claim and
// completion, and the read models' steps, read the log and the request
// table by index probes whatever the statistics say. The statistics here are those of an empty ledger
// (ANALYZE before anything is written), the executor's and the
// submitter's sessions make and keep their plans while it is empty, then
// the log and the request table grow by 40,000 rows each that no ANALYZE
// sees, as on a server
// where autovacuum is off or behind. Before migration 014, the event
// writers' version check kept a plan that read the whole log at every
// call (a hashed subplan over ledger.events). Until issue 24's second
// session, claim_requests kept a plan that probed events_pkey by
// version = 1 alone, every request's first event at each claim, and the
// read models' steps sequential scans of the log: an Index Cond that does
// not bound an index's first column counts as a whole read (leading).
func TestHotPlansIgnoreStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	var plans planLog
	execRole := db.LoginRole(t, "", "ledger_executor")
	aliceRole := db.LoginRole(t, "alice", "ledger_submitter")
	execPool := explainedPool(t, db, execRole, &plans)
	alice := ledger.NewClient(explainedPool(t, db, aliceRole, &plans))
	t.Cleanup(alice.Close)
	pol, err := policy.FromSources([]policy.Source{{Name: "test.cedar", Text: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(execPool, Config{Label: "plans", Lease: 5 * time.Second, PollInterval: 50 * time.Millisecond, Workers: 4, ClaimBatch: 4},
		pol, attest.NewSigner(priv), slog.New(slog.DiscardHandler), Echo{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db}
	e.start(t, x)
	// The read models' projection engine, whose steps read the log too.
	eng, err := projector.New(execPool, projector.Config{BatchSize: 50, PollInterval: 20 * time.Millisecond}, projector.ReadModels()...)
	if err != nil {
		t.Fatal(err)
	}
	engCtx, stopEngine := context.WithCancel(ctx)
	engDone := make(chan struct{})
	go func() { defer close(engDone); _ = eng.Run(engCtx) }()
	t.Cleanup(func() { stopEngine(); <-engDone })
	// Status, not a hot statement, is read on a pool of its own, whose
	// plans are not checked.
	watcher, err := projector.New(db.Pool, projector.Config{})
	if err != nil {
		t.Fatal(err)
	}
	caughtUp := func() {
		t.Helper()
		deadline := time.Now().Add(waitLong)
		for {
			st, err := watcher.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			behind := 0
			for _, s := range st {
				if s.Mode == "async" && (s.State != "active" || s.EventsBehind > 0) {
					behind++
				}
			}
			if behind == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the read models did not catch up within %s: %+v", waitLong, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	round := func(n int) {
		t.Helper()
		for i := range n {
			id := submit(t, alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint(i)}, RunID: fmt.Sprintf("r%d", i)})
			if r := await(t, alice, id); r.State != ledger.StateSucceeded {
				t.Fatalf("request %d: %+v", i, r)
			}
		}
	}
	// ledger.events is partitioned (024): narrow partitions, so that the
	// requests' events spread over many and every hot statement meets
	// several, each of which it must probe by index, or prune.
	// The migration's empty partitions, 100M transactions wide, go first.
	if _, err := db.Pool.Exec(ctx, `DO $$
DECLARE p text;
BEGIN
    FOR p IN SELECT name FROM ledger.event_partitions() WHERE from_tx_id IS NOT NULL AND last_position IS NULL LOOP
        EXECUTE format('DROP TABLE ledger.%I', p);
    END LOOP;
END $$;
UPDATE ledger.event_partitioning SET width = 8, ahead = 100`); err != nil {
		t.Fatal(err)
	}
	var made int
	if err := db.Pool.QueryRow(ctx, `SELECT ledger.events_partition_ahead()`).Scan(&made); err != nil || made < 50 {
		t.Fatalf("partitions created ahead: %d, %v", made, err)
	}
	// Plans made and kept (PL/pgSQL switches to a generic plan after five
	// executions) while the ledger is empty.
	round(12)
	caughtUp()
	for _, fill := range []string{
		`INSERT INTO ledger.events (stream, version, type, payload, metadata)
		 SELECT 'test:' || (g / 10), (g % 10) + 1, 'test.filler', '{}', '{}' FROM generate_series(0, 39999) g`,
		// Each in a run, so that the partial index of runs' requests is
		// as large as the table.
		`INSERT INTO ledger.request_status (id, principal, tool, run_id, input_digest, state, submitted_at, finished_at, attestation_digest)
		 SELECT gen_random_uuid(), 'filler', 'echo', 'run-' || g, '\x00', 'succeeded', now(), now(), 'sha256:00' FROM generate_series(1, 40000) g`,
	} {
		if _, err := db.Pool.Exec(ctx, fill); err != nil {
			t.Fatal(err)
		}
	}
	plans.reset()
	round(6)
	caughtUp()
	var used int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.event_partitions() WHERE last_position IS NOT NULL`).Scan(&used); err != nil || used < 4 {
		t.Fatalf("the requests' events are in %d partitions (%v), want several", used, err)
	}
	bad, total := plans.scans(eventsTables, "stream_heads", "request_status")
	if total == 0 {
		t.Fatal("auto_explain sent no plans: the test sees nothing")
	}
	if len(bad) > 0 {
		seen := map[string]int{}
		for _, b := range bad {
			seen[queryOf(b)]++
		}
		for _, b := range bad {
			for _, l := range strings.Split(b, "\n") {
				if strings.Contains(l, "Scan") {
					t.Logf("%.60s | %s", queryOf(b), strings.TrimSpace(l))
				}
			}
		}
		t.Fatalf("%d of %d plans read a whole table, of these statements: %v\nthe last:\n%s", len(bad), total, seen, bad[len(bad)-1])
	}
}

// eventsTables matches ledger.events and its partitions in a plan.
const eventsTables = `events(?:_[0-9]+|_default)?`

// queryOf is the first line of a plan's query text, to name it.
func queryOf(plan string) string {
	_, q, _ := strings.Cut(plan, "Query Text: ")
	q, _, _ = strings.Cut(q, "\n")
	return strings.TrimSpace(q)
}
