package projector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// bound is how long a test waits for anything the engine does: generous,
// for a loaded two-core machine and a server shared with other tests.
const bound = 60 * time.Second

// fast polls often, so that tests finish quickly.
var fast = projector.Config{BatchSize: 7, PollInterval: 20 * time.Millisecond, LockRetryInterval: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

type bundle struct {
	db    *testdb.DB
	exec  *testdb.Role // the engine's login: ledger_executor only
	store *ledger.Store
}

// setup makes a database with the toy read model, toy_applied: one row per
// (projection, event) applied, in the order applied. Its primary key makes
// a second application of an event an apply error, which fails the
// projection visibly.
func setup(t *testing.T) bundle {
	t.Helper()
	db := testdb.New(t)
	db.ForgesEvents() // the projector's tests append events of their own making
	exec := db.LoginRole(t, "", "ledger_executor")
	mustExec(t, db.Pool, `CREATE TABLE public.toy_applied (
    projection text   NOT NULL,
    position   bigint NOT NULL,
    type       text   NOT NULL,
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (projection, position))`)
	mustExec(t, db.Pool, `GRANT SELECT, INSERT ON public.toy_applied TO ledger_executor`)
	return bundle{db: db, exec: exec, store: ledger.NewStore(db.Pool)}
}

func mustExec(t *testing.T, db ledger.DBTX, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// counter is the toy projection: it records each event of types in
// toy_applied.
func counter(name string, types ...string) projector.Projection {
	p := projector.Projection{Name: name, Apply: map[string]projector.ApplyFunc{}}
	for _, typ := range types {
		p.Apply[typ] = record(name)
	}
	return p
}

func record(name string) projector.ApplyFunc {
	return func(ctx context.Context, tx pgx.Tx, ev ledger.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO public.toy_applied (projection, position, type) VALUES ($1, $2, $3)`, name, ev.Position, ev.Type)
		return err
	}
}

// appendEvents appends n events of type typ to stream, returning their positions.
func (b bundle) appendEvents(t *testing.T, stream, typ string, n int) []int64 {
	t.Helper()
	var out []int64
	for i := range n {
		at, err := b.store.Append(context.Background(), stream, ledger.AnyVersion, ledger.NewEvent{Type: typ, Payload: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, at[0].Position)
	}
	return out
}

// start runs an engine as the executor login until the test ends or the
// returned stop is called.
func (b bundle) start(t *testing.T, pool *pgxpool.Pool, cfg projector.Config, ps ...projector.Projection) (*projector.Engine, func()) {
	t.Helper()
	e, err := projector.New(pool, cfg, ps...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := e.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return e, stop
}

// waitFor polls cond until it holds or bound passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func statusOf(t *testing.T, e *projector.Engine, name string) projector.Status {
	t.Helper()
	all, err := e.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == name {
			return s
		}
	}
	return projector.Status{}
}

// appliedPositions is what projection name applied, in the order applied.
func (b bundle) appliedPositions(t *testing.T, name string) []int64 {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT position FROM public.toy_applied WHERE projection = $1 ORDER BY seq`, name)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// projectionEvents are the payloads of stream projection:<name>, by type.
func (b bundle) projectionEvents(t *testing.T, name string) []map[string]any {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(),
		`SELECT type, payload::text FROM ledger.events WHERE stream = $1 ORDER BY version`, "projection:"+name)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (map[string]any, error) {
		var typ, payload string
		if err := row.Scan(&typ, &payload); err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			return nil, err
		}
		m["@type"] = typ
		return m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func caughtUp(t *testing.T, e *projector.Engine, name string, last int64) func() bool {
	return func() bool {
		s := statusOf(t, e, name)
		return s.Checkpoint.Position == last && s.EventsBehind == 0
	}
}

func equalPositions(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
