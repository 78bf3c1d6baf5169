package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

const witnessOrigin = "test.execledger/log"

// witnessEnv is a database, the log's key, a witness's key and state
// file, and the auditor login the witness runs as.
type witnessEnv struct {
	db      *testdb.DB
	exec    *testdb.Role // the sealer's login
	environ []string     // DATABASE_URL: the auditor
	logKey  string       // the log's signer key file; FILE.pub its verifier
	signer  note.Signer
	witKey  string
	witness note.Verifier
	state   string
}

func witnessSetup(t *testing.T) *witnessEnv {
	t.Helper()
	db := testdb.New(t)
	dir := t.TempDir()
	w := &witnessEnv{db: db, exec: db.LoginRole(t, "", "ledger_executor"),
		environ: []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_auditor").URL},
		logKey:  filepath.Join(dir, "log.key"), witKey: filepath.Join(dir, "witness.key"), state: filepath.Join(dir, "witness.state")}
	if _, err := ledger.GenerateNoteKey(witnessOrigin, w.logKey); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.GenerateWitnessKey("witness.test", w.witKey); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.signer, err = ledger.LoadNoteSigner(w.logKey); err != nil {
		t.Fatal(err)
	}
	if w.witness, err = ledger.LoadWitnessVerifier(w.witKey + ".pub"); err != nil {
		t.Fatal(err)
	}
	return w
}

// seal runs the sealer, signing with the log key, in an engine as the
// executor login until stop or the test's end. witnesses: the keys whose
// cosignatures publish a checkpoint.
func (w *witnessEnv) seal(t *testing.T, witnesses ...note.Verifier) (stop func()) {
	t.Helper()
	s := ledger.NewSealer(ledger.SealerConfig{Signer: w.signer, CheckpointInterval: 50 * time.Millisecond, Witnesses: witnesses})
	e, err := projector.New(w.exec.Pool, projector.Config{BatchSize: 50, PollInterval: 20 * time.Millisecond,
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

// appendEvents appends n toy events to stream and returns the last one's position.
func (w *witnessEnv) appendEvents(t *testing.T, stream string, n int) int64 {
	t.Helper()
	var last int64
	for i := range n {
		at, err := ledger.NewStore(w.db.Pool).Append(context.Background(), stream, ledger.AnyVersion,
			ledger.NewEvent{Type: "toy.happened", Payload: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		last = at[0].Position
	}
	return last
}

// covering waits for a checkpoint over the event at position and returns
// the newest checkpoint.
func (w *witnessEnv) covering(t *testing.T, position int64) ledger.Checkpoint {
	t.Helper()
	var c ledger.Checkpoint
	waitUntil(t, fmt.Sprintf("a checkpoint over position %d", position), func() bool {
		var err error
		if c, err = ledger.NewestCheckpoint(context.Background(), w.db.Pool, false); err != nil {
			return false
		}
		var covered bool
		err = w.db.Pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM ledger.log_leaves WHERE position = $1 AND leaf_index < $2)`,
			position, int64(c.Size)).Scan(&covered)
		return err == nil && covered
	})
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (w *witnessEnv) args(extra ...string) []string {
	return append([]string{"witness", "--log-key", w.logKey + ".pub", "--key", w.witKey, "--state", w.state}, extra...)
}

// pass runs one witness pass.
func (w *witnessEnv) pass(t *testing.T, extra ...string) result {
	t.Helper()
	return execute(t, w.environ, "", w.args(append([]string{"--once"}, extra...)...)...)
}

// stateSize is the size of the checkpoint in the state file, which the
// log key must verify.
func (w *witnessEnv) stateSize(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile(w.state)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ledger.LoadNoteVerifier(w.logKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	c, _, _, err := log.ParseCheckpoint(b, witnessOrigin, v)
	if err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return c.Size
}

// cosignatures counts the rows the witness's key has in checkpoint_cosignatures.
func (w *witnessEnv) cosignatures(t *testing.T) int {
	t.Helper()
	var n int
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ledger.checkpoint_cosignatures WHERE key_name = $1 AND key_hash = $2`,
		w.witness.Name(), int64(w.witness.KeyHash())).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// asSuperuser runs statements as the database's owner, with the log's and
// the events' append-only triggers disabled.
func (w *witnessEnv) asSuperuser(t *testing.T, stmts ...string) {
	t.Helper()
	for _, tbl := range []string{"events", "log_leaves", "log_nodes", "checkpoints", "checkpoint_cosignatures"} {
		stmts = append([]string{"ALTER TABLE ledger." + tbl + " DISABLE TRIGGER ALL"}, stmts...)
	}
	for _, s := range stmts {
		if _, err := w.db.Pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestWitnessCosignsAndTheSealerPublishes: the first pass trusts the
// newest checkpoint and cosigns it, which publishes it; after more events
// a pass in loop mode proves the new checkpoint consistent with the state
// and cosigns it too.
func TestWitnessCosignsAndTheSealerPublishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := witnessSetup(t)
	w.seal(t, w.witness)
	c1 := w.covering(t, w.appendEvents(t, "toy:a", 5))
	if _, err := ledger.NewestCheckpoint(ctx, w.db.Pool, true); !errors.Is(err, ledger.ErrNoCheckpoint) {
		t.Fatalf("a checkpoint was published before the witness cosigned it: %v", err)
	}

	r := w.pass(t)
	if r.code != exitOK || !strings.Contains(r.stdout, "TRUST ON FIRST USE") || !strings.Contains(r.stdout, "cosigned as witness.test") {
		t.Fatalf("first pass: %+v", r)
	}
	s1 := w.stateSize(t)
	if fi, err := os.Stat(w.state); err != nil || fi.Mode().Perm() != 0o600 || s1 < c1.Size {
		t.Fatalf("state: size %d (checkpoint %d), %v %v", s1, c1.Size, fi.Mode(), err)
	}
	w.checkCosigned(t, s1)
	waitUntil(t, fmt.Sprintf("checkpoint %d published", s1), func() bool {
		c, err := ledger.NewestCheckpoint(ctx, w.db.Pool, true)
		return err == nil && c.Size == s1
	})

	// More events, a newer checkpoint: the witness, now in loop mode,
	// verifies the consistency proof from s1 and cosigns.
	c2 := w.covering(t, w.appendEvents(t, "toy:b", 5))
	stop, out := startCommand(t, w.environ, w.args("--interval", "50ms", "--json")...)
	waitUntil(t, "the witness to cosign a newer checkpoint", func() bool {
		c, err := ledger.NewestCheckpoint(ctx, w.db.Pool, true)
		return err == nil && c.Size >= c2.Size
	})
	if code := stop(); code != exitOK {
		t.Fatalf("witness loop exited %d:\n%s", code, out)
	}
	var p witnessPass
	if err := json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &p); err != nil {
		t.Fatalf("witness --json: %v\n%s", err, out)
	}
	s2 := w.stateSize(t)
	if p.Result != "cosigned" || p.TrustOnFirstUse || p.StateSize != s1 || p.Size != s2 || s2 < c2.Size || p.ProofHashes == 0 {
		t.Fatalf("second pass %+v; state %d, checkpoint %d\n%s", p, s2, c2.Size, out)
	}
	w.checkCosigned(t, s2)

	if r := w.pass(t); r.code != exitOK || !strings.Contains(r.stdout, "no new checkpoint") {
		t.Fatalf("third pass: %+v", r)
	}
	if n := w.cosignatures(t); n != 2 {
		t.Fatalf("%d cosignatures, want 2", n)
	}
}

// checkCosigned checks that checkpoint size carries a cosignature the
// witness's public key verifies, beside the log's signature.
func (w *witnessEnv) checkCosigned(t *testing.T, size uint64) {
	t.Helper()
	c, err := ledger.CheckpointAt(context.Background(), w.db.Pool, size)
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := ledger.LoadNoteVerifier(w.logKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(c.FullNote(), note.VerifierList(logKey, w.witness))
	if err != nil || len(n.Sigs) != 2 || ledger.CountCosignatures(c, []note.Verifier{w.witness}) != 1 {
		t.Fatalf("checkpoint %d: %v\n%s", size, err, c.FullNote())
	}
}

// TestWitnessRefusesARewrittenLog: a superuser changes a sealed event,
// throws the whole log away and lets the sealer seal and sign everything
// again with the log's own key. Every checkpoint verifies; the witness
// still refuses, because what it accepted is not a prefix of the new tree.
func TestWitnessRefusesARewrittenLog(t *testing.T) {
	t.Parallel()
	w := witnessSetup(t)
	stop := w.seal(t)
	first := w.appendEvents(t, "toy:a", 1)
	w.covering(t, w.appendEvents(t, "toy:a", 9))
	if r := w.pass(t); r.code != exitOK {
		t.Fatalf("first pass: %+v", r)
	}
	state, err := os.ReadFile(w.state)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	w.asSuperuser(t,
		fmt.Sprintf(`UPDATE ledger.events SET payload = '{"n": 999}' WHERE position = %d`, first),
		`DELETE FROM ledger.checkpoint_cosignatures`, `DELETE FROM ledger.checkpoints`,
		`DELETE FROM ledger.log_nodes`, `DELETE FROM ledger.log_leaves`,
		`UPDATE ledger.projections SET tx_id = '0', position = 0 WHERE name = 'log'`)
	w.seal(t)
	if c := w.covering(t, w.appendEvents(t, "toy:b", 1)); c.Size <= w.stateSize(t) {
		t.Fatalf("the new log's newest checkpoint %d is not past the state's %d", c.Size, w.stateSize(t))
	}

	r := w.pass(t)
	if r.code != exitNotOK || !strings.Contains(r.stderr, "REFUSED (inconsistent)") && !strings.Contains(r.stderr, "REFUSED (fork)") ||
		!strings.Contains(r.stderr, "the log was rewritten or rolled back; do not cosign") {
		t.Fatalf("pass over a rewritten log: %+v", r)
	}
	if n := w.cosignatures(t); n != 0 {
		t.Fatalf("the witness cosigned the rewritten log %d times", n)
	}
	if now, _ := os.ReadFile(w.state); string(now) != string(state) {
		t.Fatalf("the state moved:\n%s", now)
	}
}

// TestWitnessRefusesARollback: the log's tail and its newest checkpoints
// are deleted and the sealer pointed back at an older size; the witness,
// in loop mode, stops at the first pass.
func TestWitnessRefusesARollback(t *testing.T) {
	t.Parallel()
	w := witnessSetup(t)
	stop := w.seal(t)
	w.covering(t, w.appendEvents(t, "toy:a", 5))
	if r := w.pass(t); r.code != exitOK {
		t.Fatalf("first pass: %+v", r)
	}
	s1 := w.stateSize(t)
	w.covering(t, w.appendEvents(t, "toy:b", 5))
	stop()
	if r := w.pass(t); r.code != exitOK || !strings.Contains(r.stdout, "is consistent with size") {
		t.Fatalf("second pass: %+v", r)
	}
	s2 := w.stateSize(t)

	w.asSuperuser(t,
		fmt.Sprintf(`DELETE FROM ledger.checkpoint_cosignatures WHERE size > %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.checkpoints WHERE size > %d`, s1),
		fmt.Sprintf(`UPDATE ledger.projections p SET tx_id = l.tx_id, position = l.position FROM ledger.log_leaves l
WHERE p.name = 'log' AND l.leaf_index = %d`, s1-1),
		fmt.Sprintf(`DELETE FROM ledger.log_nodes WHERE (idx + 1) * (1::bigint << level::int) > %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.log_leaves WHERE leaf_index >= %d`, s1))

	r := execute(t, w.environ, "", w.args("--interval", "50ms")...)
	want := fmt.Sprintf("REFUSED (rollback): the newest checkpoint is smaller than the one the witness accepted: the log lost checkpoints or leaves; "+
		"the witness accepted size %d root", s2)
	if r.code != exitNotOK || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, fmt.Sprintf("the log's newest checkpoint is size %d root", s1)) {
		t.Fatalf("pass over a rolled back log: %+v\nwant %q", r, want)
	}
	if n := w.cosignatures(t); n != 1 || w.stateSize(t) != s2 {
		t.Fatalf("%d cosignatures (want the first pass's), state %d (want %d)", n, w.stateSize(t), s2)
	}
}

// TestWitnessRefusesAFork: the log signs another tree of a size the
// witness accepted. While a newer checkpoint remains, the tree itself
// proves consistent, and only the database's checkpoint of the state's
// size gives the split view away; then the newest checkpoint is that one.
func TestWitnessRefusesAFork(t *testing.T) {
	t.Parallel()
	w := witnessSetup(t)
	stop := w.seal(t)
	w.covering(t, w.appendEvents(t, "toy:a", 5))
	if r := w.pass(t); r.code != exitOK {
		t.Fatalf("first pass: %+v", r)
	}
	s1 := w.stateSize(t)
	w.covering(t, w.appendEvents(t, "toy:b", 5))
	stop()

	root := sha256.Sum256([]byte("another tree"))
	forged, err := note.Sign(&note.Note{Text: string(log.Checkpoint{Origin: witnessOrigin, Size: s1, Hash: root[:]}.Marshal())}, w.signer)
	if err != nil {
		t.Fatal(err)
	}
	w.asSuperuser(t, fmt.Sprintf(`DELETE FROM ledger.checkpoint_cosignatures WHERE size = %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.checkpoints WHERE size = %d`, s1))
	if _, err := w.db.Pool.Exec(context.Background(), `INSERT INTO ledger.checkpoints (size, root_hash, origin, note) VALUES ($1, $2, $3, $4)`,
		int64(s1), root[:], witnessOrigin, string(forged)); err != nil {
		t.Fatal(err)
	}
	r := w.pass(t)
	if r.code != exitNotOK || !strings.Contains(r.stderr, fmt.Sprintf("REFUSED (fork): the log's checkpoint of size %d now has root", s1)) {
		t.Fatalf("pass with a forked older checkpoint: %+v", r)
	}

	w.asSuperuser(t, fmt.Sprintf(`DELETE FROM ledger.checkpoint_cosignatures WHERE size > %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.checkpoints WHERE size > %d`, s1))
	r = w.pass(t)
	if r.code != exitNotOK || !strings.Contains(r.stderr, fmt.Sprintf("REFUSED (fork): the log signed two different trees of size %d", s1)) {
		t.Fatalf("pass with a forked newest checkpoint: %+v", r)
	}
	if n := w.cosignatures(t); n != 0 || w.stateSize(t) != s1 {
		t.Fatalf("%d cosignatures, state %d: the witness accepted a fork", n, w.stateSize(t))
	}
}

// TestWitnessRefusesACheckpointSignedByAnotherKey: a key with the log's
// name but not its key does not sign for it, for the newest checkpoint or
// for the state file.
func TestWitnessRefusesACheckpointSignedByAnotherKey(t *testing.T) {
	t.Parallel()
	w := witnessSetup(t)
	w.seal(t)
	w.covering(t, w.appendEvents(t, "toy:a", 3))
	other := filepath.Join(t.TempDir(), "other.key")
	otherPub, err := ledger.GenerateNoteKey(witnessOrigin, other)
	if err != nil {
		t.Fatal(err)
	}
	byOther := []string{"witness", "--once", "--log-key", otherPub, "--key", w.witKey, "--state", w.state}
	r := execute(t, w.environ, "", byOther...)
	if r.code != exitNotOK || !strings.Contains(r.stderr, "REFUSED (bad_signature): the newest checkpoint is not signed by the log key "+witnessOrigin) {
		t.Fatalf("pass with another log key: %+v", r)
	}
	if _, err := os.Stat(w.state); !errors.Is(err, os.ErrNotExist) || w.cosignatures(t) != 0 {
		t.Fatalf("the witness accepted it: state %v, %d cosignatures", err, w.cosignatures(t))
	}

	// The log key given as its text, not a file.
	pub, err := os.ReadFile(w.logKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	r = execute(t, w.environ, "", "witness", "--once", "--log-key", strings.TrimSpace(string(pub)), "--key", w.witKey, "--state", w.state)
	if r.code != exitOK || w.cosignatures(t) != 1 {
		t.Fatalf("pass with the log key's text: %+v", r)
	}
	// A state the key does not verify is an error, not a first use.
	if r = execute(t, w.environ, "", byOther...); r.code != exitError || !strings.Contains(r.stderr, "does not fall back to trust on first use") {
		t.Fatalf("pass with another log key over a state: %+v", r)
	}
}

// TestWitnessUsage: missing flags are usage errors; an unreachable
// database is an error; an empty log is nothing to do.
func TestWitnessUsage(t *testing.T) {
	t.Parallel()
	w := witnessSetup(t)
	pub := w.logKey + ".pub"
	for _, args := range [][]string{
		{"witness", "--key", w.witKey, "--state", w.state},
		{"witness", "--log-key", pub, "--state", w.state},
		{"witness", "--log-key", pub, "--key", w.witKey},
		{"witness", "--log-key", pub, "--key", w.witKey, "--state", w.state, "--interval", "0s"},
		{"witness", "--log-key", pub, "--key", w.witKey, "--state", w.state, "extra"},
	} {
		if r := execute(t, w.environ, "", args...); r.code != exitUsage || !strings.Contains(r.stderr, "usage: execledger witness") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := execute(t, []string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "", w.args("--once")...); r.code != exitError || !strings.Contains(r.stderr, "connect to") {
		t.Errorf("unreachable database: %+v", r)
	}
	if r := w.pass(t); r.code != exitOK || !strings.Contains(r.stdout, "has no checkpoint yet") {
		t.Errorf("empty log: %+v", r)
	}
	if _, err := os.Stat(w.state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state written without a checkpoint: %v", err)
	}
}
