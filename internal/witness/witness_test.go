package witness_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/witness"
	"github.com/execledger/execledger/internal/witness/witnesstest"
)

// newWitness is env's witness, with the log key read from its file.
func newWitness(t *testing.T, env *witnesstest.Env) *witness.Witness {
	t.Helper()
	w, err := witness.New(env.LogKey+".pub", env.WitKey, env.State)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// pass runs one pass as the auditor login.
func pass(t *testing.T, env *witnesstest.Env) (witness.Pass, error) {
	t.Helper()
	return newWitness(t, env).Pass(context.Background(), env.Auditor.Pool)
}

// refused checks that err is a refusal of kind whose message holds want,
// and that p says so.
func refused(t *testing.T, p witness.Pass, err error, kind, want string) {
	t.Helper()
	var ref *witness.Refusal
	if !errors.As(err, &ref) || ref.Kind != kind || p.Result != witness.ResultRefused || p.Refusal != kind ||
		p.Message != err.Error() || !strings.Contains(err.Error(), want) ||
		!strings.HasSuffix(err.Error(), "the log was rewritten or rolled back; do not cosign") {
		t.Fatalf("pass: %+v, %v; want a %s refusal saying %q", p, err, kind, want)
	}
}

// TestPassTrustsFirstThenProvesConsistency: an empty log is nothing to
// do; the first checkpoint is trusted on first use and cosigned; a newer
// one is cosigned once its consistency proof from the state verifies; the
// same one again is no new checkpoint.
func TestPassTrustsFirstThenProvesConsistency(t *testing.T) {
	t.Parallel()
	env := witnesstest.New(t)
	if p, err := pass(t, env); err != nil || p.Result != witness.ResultNoCheckpoint || p.Origin != witnesstest.Origin {
		t.Fatalf("empty log: %+v, %v", p, err)
	}
	if _, err := os.Stat(env.State); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state written without a checkpoint: %v", err)
	}
	stop := env.Seal(t)
	c1 := env.Covering(t, env.AppendEvents(t, "toy:a", 5))
	p, err := pass(t, env)
	if err != nil || p.Result != witness.ResultCosigned || !p.TrustOnFirstUse || p.Size < c1.Size || p.Witness != "witness.test" {
		t.Fatalf("first pass: %+v, %v", p, err)
	}
	if fi, err := os.Stat(env.State); err != nil || fi.Mode().Perm() != 0o600 || env.StateSize(t) != p.Size {
		t.Fatalf("state: %v %v", fi, err)
	}
	env.CheckCosigned(t, p.Size)
	s1 := p.Size

	c2 := env.Covering(t, env.AppendEvents(t, "toy:b", 5))
	stop() // the log holds still from here
	p, err = pass(t, env)
	if err != nil || p.Result != witness.ResultCosigned || p.TrustOnFirstUse || p.StateSize != s1 || p.Size < c2.Size || p.ProofHashes == 0 {
		t.Fatalf("second pass: %+v, %v", p, err)
	}
	env.CheckCosigned(t, p.Size)
	if env.StateSize(t) != p.Size {
		t.Fatalf("state %d, cosigned %d", env.StateSize(t), p.Size)
	}
	if p, err = pass(t, env); err != nil || p.Result != witness.ResultNoNewCheckpoint {
		t.Fatalf("third pass: %+v, %v", p, err)
	}
	if n := env.Cosignatures(t); n != 2 {
		t.Fatalf("%d cosignatures, want 2", n)
	}
}

// TestPassRefusesARewrittenLog: a superuser changes a sealed event,
// throws the whole log away and lets the sealer seal and sign everything
// again with the log's own key. Every checkpoint verifies; the witness
// still refuses, because what it accepted is not a prefix of the new tree.
func TestPassRefusesARewrittenLog(t *testing.T) {
	t.Parallel()
	env := witnesstest.New(t)
	stop := env.Seal(t)
	first := env.AppendEvents(t, "toy:a", 1)
	env.Covering(t, env.AppendEvents(t, "toy:a", 9))
	if _, err := pass(t, env); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	state, err := os.ReadFile(env.State)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	env.AsSuperuser(t,
		fmt.Sprintf(`UPDATE ledger.events SET payload = '{"n": 999}' WHERE position = %d`, first),
		`DELETE FROM ledger.checkpoint_cosignatures`, `DELETE FROM ledger.checkpoints`,
		`DELETE FROM ledger.log_nodes`, `DELETE FROM ledger.log_leaves`,
		`UPDATE ledger.projections SET tx_id = '0', position = 0 WHERE name = 'log'`)
	env.Seal(t)
	if c := env.Covering(t, env.AppendEvents(t, "toy:b", 1)); c.Size <= env.StateSize(t) {
		t.Fatalf("the new log's newest checkpoint %d is not past the state's %d", c.Size, env.StateSize(t))
	}

	p, err := pass(t, env)
	var ref *witness.Refusal
	if !errors.As(err, &ref) || ref.Kind != witness.RefuseInconsistent && ref.Kind != witness.RefuseFork {
		t.Fatalf("pass over a rewritten log: %+v, %v", p, err)
	}
	refused(t, p, err, ref.Kind, "")
	if n := env.Cosignatures(t); n != 0 {
		t.Fatalf("the witness cosigned the rewritten log %d times", n)
	}
	if now, _ := os.ReadFile(env.State); string(now) != string(state) {
		t.Fatalf("the state moved:\n%s", now)
	}
}

// TestRunnerStopsAtARollback: the log's tail and its newest checkpoints
// are deleted and the sealer pointed back at an older size; the runner,
// in loop mode, reports the refusal and stops at the first pass.
func TestRunnerStopsAtARollback(t *testing.T) {
	t.Parallel()
	env := witnesstest.New(t)
	stop := env.Seal(t)
	env.Covering(t, env.AppendEvents(t, "toy:a", 5))
	if _, err := pass(t, env); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	s1 := env.StateSize(t)
	env.Covering(t, env.AppendEvents(t, "toy:b", 5))
	stop()
	if p, err := pass(t, env); err != nil || p.StateSize != s1 || p.ProofHashes == 0 {
		t.Fatalf("second pass: %+v, %v", p, err)
	}
	s2 := env.StateSize(t)

	env.AsSuperuser(t,
		fmt.Sprintf(`DELETE FROM ledger.checkpoint_cosignatures WHERE size > %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.checkpoints WHERE size > %d`, s1),
		fmt.Sprintf(`UPDATE ledger.projections p SET tx_id = l.tx_id, position = l.position FROM ledger.log_leaves l
WHERE p.name = 'log' AND l.leaf_index = %d`, s1-1),
		fmt.Sprintf(`DELETE FROM ledger.log_nodes WHERE (idx + 1) * (1::bigint << level::int) > %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.log_leaves WHERE leaf_index >= %d`, s1))

	var reported []witness.Pass
	r := &witness.Runner{Witness: newWitness(t, env), Interval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(ctx context.Context) (*pgxpool.Pool, error) { return pgxpool.New(ctx, env.Auditor.URL) },
		Report:  func(p witness.Pass) { reported = append(reported, p) }}
	err := r.Run(context.Background())
	if len(reported) != 1 {
		t.Fatalf("reported %+v, %v", reported, err)
	}
	refused(t, reported[0], err, witness.RefuseRollback, fmt.Sprintf("REFUSED (rollback): the newest checkpoint is smaller than the one the witness accepted: "+
		"the log lost checkpoints or leaves; the witness accepted size %d root", s2))
	if !strings.Contains(err.Error(), fmt.Sprintf("the log's newest checkpoint is size %d root", s1)) {
		t.Fatalf("refusal: %v", err)
	}
	if n := env.Cosignatures(t); n != 1 || env.StateSize(t) != s2 {
		t.Fatalf("%d cosignatures (want the first pass's), state %d (want %d)", n, env.StateSize(t), s2)
	}
}

// TestPassRefusesAFork: the log signs another tree of a size the witness
// accepted. While a newer checkpoint remains, the tree itself proves
// consistent, and only the database's checkpoint of the state's size
// gives the split view away; then the newest checkpoint is that one.
func TestPassRefusesAFork(t *testing.T) {
	t.Parallel()
	env := witnesstest.New(t)
	stop := env.Seal(t)
	env.Covering(t, env.AppendEvents(t, "toy:a", 5))
	if _, err := pass(t, env); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	s1 := env.StateSize(t)
	env.Covering(t, env.AppendEvents(t, "toy:b", 5))
	stop()

	root := sha256.Sum256([]byte("another tree"))
	forged, err := note.Sign(&note.Note{Text: string(log.Checkpoint{Origin: witnesstest.Origin, Size: s1, Hash: root[:]}.Marshal())}, env.Signer)
	if err != nil {
		t.Fatal(err)
	}
	env.AsSuperuser(t, fmt.Sprintf(`DELETE FROM ledger.checkpoint_cosignatures WHERE size = %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.checkpoints WHERE size = %d`, s1))
	if _, err := env.DB.Pool.Exec(context.Background(), `INSERT INTO ledger.checkpoints (size, root_hash, origin, note) VALUES ($1, $2, $3, $4)`,
		int64(s1), root[:], witnesstest.Origin, string(forged)); err != nil {
		t.Fatal(err)
	}
	p, err := pass(t, env)
	refused(t, p, err, witness.RefuseFork, fmt.Sprintf("REFUSED (fork): the log's checkpoint of size %d now has root", s1))

	env.AsSuperuser(t, fmt.Sprintf(`DELETE FROM ledger.checkpoint_cosignatures WHERE size > %d`, s1),
		fmt.Sprintf(`DELETE FROM ledger.checkpoints WHERE size > %d`, s1))
	p, err = pass(t, env)
	refused(t, p, err, witness.RefuseFork, fmt.Sprintf("REFUSED (fork): the log signed two different trees of size %d", s1))
	if n := env.Cosignatures(t); n != 0 || env.StateSize(t) != s1 {
		t.Fatalf("%d cosignatures, state %d: the witness accepted a fork", n, env.StateSize(t))
	}
}

// TestRunnerRetriesTheDatabase: in loop mode a failure to connect is
// retried after RetryFirst; once mode returns it, and a failure that is
// not the database's (a state the log key does not verify) ends the loop.
func TestRunnerRetriesTheDatabase(t *testing.T) {
	t.Parallel()
	env := witnesstest.New(t)
	env.Seal(t)
	env.Covering(t, env.AppendEvents(t, "toy:a", 3))
	away := errors.New("connection refused")
	runner := func(once bool, failures int, report func(witness.Pass)) *witness.Runner {
		return &witness.Runner{Witness: newWitness(t, env), Once: once, Interval: time.Hour,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Report: report,
			Connect: func(ctx context.Context) (*pgxpool.Pool, error) {
				if failures > 0 {
					failures--
					return nil, away
				}
				return pgxpool.New(ctx, env.Auditor.URL)
			}}
	}
	if err := runner(true, 1, func(p witness.Pass) { t.Errorf("reported %+v", p) }).Run(context.Background()); !errors.Is(err, away) {
		t.Fatalf("once, database away: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []witness.Pass
	err := runner(false, 1, func(p witness.Pass) { got = append(got, p); cancel() }).Run(ctx)
	if err != nil || len(got) != 1 || got[0].Result != witness.ResultCosigned {
		t.Fatalf("loop after a failed connect: %+v, %v", got, err)
	}

	if err := os.WriteFile(env.State, []byte("not a checkpoint\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = runner(false, 0, func(p witness.Pass) { t.Errorf("reported %+v", p) }).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not fall back to trust on first use") {
		t.Fatalf("loop over a bad state: %v", err)
	}
}
