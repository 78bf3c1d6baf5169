// Package witnesstest sets up what tests of the witness need: a database
// with a sealer signing checkpoints, the log's key, a witness's key and
// state file, and the checks a test makes of what the witness did. It is
// for tests only (of internal/witness and of execledger witness).
package witnesstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// Origin is the test log's origin, the name of its key.
const Origin = "test.execledger/log"

// Env is a database, the log's key, a witness's key and state file, and
// the auditor login the witness runs as.
type Env struct {
	DB      *testdb.DB
	Exec    *testdb.Role // the sealer's login
	Auditor *testdb.Role // the witness's login
	LogKey  string       // the log's signer key file; LogKey+".pub" its verifier
	Signer  note.Signer
	WitKey  string // the witness's signer key file
	Witness note.Verifier
	State   string
}

// New makes a database and the keys; the state file does not exist yet.
func New(t *testing.T) *Env {
	t.Helper()
	db := testdb.New(t)
	dir := t.TempDir()
	w := &Env{DB: db, Exec: db.LoginRole(t, "", "ledger_executor"), Auditor: db.LoginRole(t, "", "ledger_auditor"),
		LogKey: filepath.Join(dir, "log.key"), WitKey: filepath.Join(dir, "witness.key"), State: filepath.Join(dir, "witness.state")}
	if _, err := ledger.GenerateNoteKey(Origin, w.LogKey); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.GenerateWitnessKey("witness.test", w.WitKey); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.Signer, err = ledger.LoadNoteSigner(w.LogKey); err != nil {
		t.Fatal(err)
	}
	if w.Witness, err = ledger.LoadWitnessVerifier(w.WitKey + ".pub"); err != nil {
		t.Fatal(err)
	}
	return w
}

// Seal runs the sealer, signing with the log key, in an engine as the
// executor login until stop or the test's end. witnesses: the keys whose
// cosignatures publish a checkpoint.
func (w *Env) Seal(t *testing.T, witnesses ...note.Verifier) (stop func()) {
	t.Helper()
	s := ledger.NewSealer(ledger.SealerConfig{Signer: w.Signer, CheckpointInterval: 50 * time.Millisecond, Witnesses: witnesses})
	e, err := projector.New(w.Exec.Pool, projector.Config{BatchSize: 50, PollInterval: 20 * time.Millisecond,
		LockRetryInterval: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, projector.Sealer(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("sealer: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// AppendEvents appends n toy events to stream and returns the last one's position.
func (w *Env) AppendEvents(t *testing.T, stream string, n int) int64 {
	t.Helper()
	var last int64
	for i := range n {
		at, err := ledger.NewStore(w.DB.Pool).Append(context.Background(), stream, ledger.AnyVersion,
			ledger.NewEvent{Type: "toy.happened", Payload: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		last = at[0].Position
	}
	return last
}

// Covering waits for a checkpoint over the event at position and returns
// the newest checkpoint.
func (w *Env) Covering(t *testing.T, position int64) ledger.Checkpoint {
	t.Helper()
	var c ledger.Checkpoint
	WaitUntil(t, fmt.Sprintf("a checkpoint over position %d", position), func() bool {
		var err error
		if c, err = ledger.NewestCheckpoint(context.Background(), w.DB.Pool, false); err != nil {
			return false
		}
		var covered bool
		err = w.DB.Pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM ledger.log_leaves WHERE position = $1 AND leaf_index < $2)`,
			position, int64(c.Size)).Scan(&covered)
		return err == nil && covered
	})
	return c
}

// WaitUntil polls cond until it holds, for at most a minute.
func WaitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// StateSize is the size of the checkpoint in the state file, which the
// log key must verify.
func (w *Env) StateSize(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile(w.State)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ledger.LoadNoteVerifier(w.LogKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	c, _, _, err := log.ParseCheckpoint(b, Origin, v)
	if err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return c.Size
}

// Cosignatures counts the rows the witness's key has in checkpoint_cosignatures.
func (w *Env) Cosignatures(t *testing.T) int {
	t.Helper()
	var n int
	if err := w.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ledger.checkpoint_cosignatures WHERE key_name = $1 AND key_hash = $2`,
		w.Witness.Name(), int64(w.Witness.KeyHash())).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// CheckCosigned checks that checkpoint size carries a cosignature the
// witness's public key verifies, beside the log's signature.
func (w *Env) CheckCosigned(t *testing.T, size uint64) {
	t.Helper()
	c, err := ledger.CheckpointAt(context.Background(), w.DB.Pool, size)
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := ledger.LoadNoteVerifier(w.LogKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(c.FullNote(), note.VerifierList(logKey, w.Witness))
	if err != nil || len(n.Sigs) != 2 || ledger.CountCosignatures(c, []note.Verifier{w.Witness}) != 1 {
		t.Fatalf("checkpoint %d: %v\n%s", size, err, c.FullNote())
	}
}

// AsSuperuser runs statements as the database's owner, with the log's and
// the events' append-only triggers disabled.
func (w *Env) AsSuperuser(t *testing.T, stmts ...string) {
	t.Helper()
	for _, tbl := range []string{"events", "log_leaves", "log_nodes", "checkpoints", "checkpoint_cosignatures"} {
		stmts = append([]string{"ALTER TABLE ledger." + tbl + " DISABLE TRIGGER ALL"}, stmts...)
	}
	for _, s := range stmts {
		if _, err := w.DB.Pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
