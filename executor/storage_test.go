package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// writer is a tool whose result carries storage writes: input {"writes":
// [{"key", "value"}], "fail", "steal"}, "<NUL>" and "<FF>" in a key
// standing for the bytes 0 and 0xff, which JSON input cannot hold. With steal, the call takes its own
// request's claim away (as a rescuer would) before it returns.
type writer struct {
	steal func(ctx context.Context, id uuid.UUID) error
}

func (*writer) Name() string                               { return "test.writer" }
func (*writer) Executor() string                           { return "builtin" }
func (*writer) Tier() string                               { return "builtin" }
func (*writer) SafeToRepeat() bool                         { return false }
func (*writer) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (w *writer) Run(ctx context.Context, c Call) Result {
	var in struct {
		Writes      []struct{ Key, Value string }
		Fail, Steal bool
	}
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return failure("invalid_input", err.Error())
	}
	res := Result{Output: json.RawMessage(`{}`)}
	for _, kv := range in.Writes {
		res.StorageWrites = append(res.StorageWrites, StorageWrite{Key: unescapeKey(kv.Key), Value: []byte(kv.Value)})
	}
	if in.Fail {
		res.ErrorKind, res.Error = "runtime_failure", "failed after writing"
	}
	if in.Steal {
		if err := w.steal(ctx, c.RequestID); err != nil {
			return failure("runtime_failure", err.Error())
		}
	}
	return res
}

func unescapeKey(k string) string {
	return strings.NewReplacer("<NUL>", "\x00", "<FF>", "\xff").Replace(k)
}

// pairs is a writer's input writing key=value pairs.
func pairs(kv ...string) []any {
	var out []any
	for i := 0; i < len(kv); i += 2 {
		out = append(out, map[string]any{"key": kv[i], "value": kv[i+1]})
	}
	return out
}

func stored(t *testing.T, e *env, key string) (string, bool) {
	t.Helper()
	var v []byte
	err := e.db.Pool.QueryRow(context.Background(), "SELECT value FROM ledger.skill_storage WHERE key = $1", key).Scan(&v)
	if err != nil {
		return "", false
	}
	return string(v), true
}

func setupWriter(t *testing.T) *env {
	t.Helper()
	w := &writer{}
	e := setup(t, nil, w)
	w.steal = func(ctx context.Context, id uuid.UUID) error {
		_, err := e.db.Pool.Exec(ctx, "UPDATE ledger.queue SET claim_id = $2 WHERE id = $1", id, uuid.New())
		return err
	}
	return e
}

// TestStorageWritesCommitWithTheOutcome: a call's storage writes are
// written in the transaction that records its success, the last of a key
// winning, and never for a call that failed.
func TestStorageWritesCommitWithTheOutcome(t *testing.T) {
	t.Parallel()
	e := setupWriter(t)
	ok := submit(t, e.alice, ledger.SubmitParams{Tool: "test.writer", Input: map[string]any{
		"writes": pairs("k/ok", "v1", "k/twice", "first", "k/empty", "", "k/twice", "last")}})
	failed := submit(t, e.alice, ledger.SubmitParams{Tool: "test.writer", Input: map[string]any{
		"writes": pairs("k/failed", "v2"), "fail": true}})
	if r := await(t, e.alice, ok); r.State != ledger.StateSucceeded {
		t.Fatalf("%+v", r)
	}
	for key, want := range map[string]string{"k/ok": "v1", "k/twice": "last", "k/empty": ""} {
		if v, found := stored(t, e, key); !found || v != want {
			t.Errorf("a succeeded call's write of %s: %q %v, want %q", key, v, found, want)
		}
	}
	if r := await(t, e.alice, failed); r.State != ledger.StateFailed {
		t.Fatalf("%+v", r)
	}
	if v, found := stored(t, e, "k/failed"); found {
		t.Errorf("a failed call's write was stored: %q", v)
	}
}

// TestStorageWritesOfALostClaim: a call whose claim was taken away before
// its outcome was written has its outcome dropped, writes included; the
// request ends as the rescuer settles it, not as the call did.
func TestStorageWritesOfALostClaim(t *testing.T) {
	t.Parallel()
	e := setupWriter(t)
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "test.writer", Input: map[string]any{
		"writes": pairs("k/lost", "v3"), "steal": true}})
	if r := await(t, e.alice, id); r.State == ledger.StateSucceeded {
		t.Fatalf("the outcome of a call whose claim was lost was recorded: %+v", r)
	}
	if v, found := stored(t, e, "k/lost"); found {
		t.Errorf("the write of a call whose claim was lost was stored: %q", v)
	}
}

// TestStorageWritesUnstorable: a successful result with a key the table
// refuses becomes a runtime_failure that writes nothing, and does not hold
// up other outcomes.
func TestStorageWritesUnstorable(t *testing.T) {
	t.Parallel()
	e := setupWriter(t)
	for _, key := range []string{"", "k/<NUL>", "k/<FF>", "k/" + strings.Repeat("x", maxStorageKey-1)} {
		bad := submit(t, e.alice, ledger.SubmitParams{Tool: "test.writer", Input: map[string]any{
			"writes": pairs("k/beside", "v", key, "v")}})
		good := submit(t, e.alice, ledger.SubmitParams{Tool: "test.writer", Input: map[string]any{
			"writes": pairs("k/good", "v")}})
		r := await(t, e.alice, bad)
		if r.State != ledger.StateFailed || r.ErrorKind == nil || string(*r.ErrorKind) != "runtime_failure" ||
			r.Error == nil || !strings.Contains(*r.Error, "storage write") {
			t.Errorf("key %q: %s %s %s", key, r.State, deref((*string)(r.ErrorKind)), deref(r.Error))
		}
		if r := await(t, e.alice, good); r.State != ledger.StateSucceeded {
			t.Errorf("beside key %q: %+v", key, r)
		}
	}
	if _, found := stored(t, e, "k/beside"); found {
		t.Error("a refused result's other write was stored")
	}
	if _, found := stored(t, e, "k/good"); !found {
		t.Error("a good result's write was not stored")
	}
}

// TestStorageWritesMerged: a batch's writes are one statement, the last
// result's value of a key winning, nil stored as empty.
func TestStorageWritesMerged(t *testing.T) {
	t.Parallel()
	e := setupWriter(t)
	ctx := context.Background()
	tx, err := e.execSQL.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var s storageWrites
	s.add([]StorageWrite{{Key: "k/a", Value: []byte("1")}, {Key: "k/b", Value: []byte("1")}})
	s.add(nil)
	s.add([]StorageWrite{{Key: "k/b", Value: []byte("2")}, {Key: "k/nil"}})
	if err := s.exec(ctx, tx); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "SELECT key || '=' || encode(value, 'escape') FROM ledger.skill_storage ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(got, " ") != "k/a=1 k/b=2 k/nil=" {
		t.Errorf("stored %q, %v", got, err)
	}
}
