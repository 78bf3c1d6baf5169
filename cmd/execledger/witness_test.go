package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/witness"
	"github.com/execledger/execledger/internal/witness/witnesstest"
	"github.com/execledger/execledger/ledger"
)

// The witness protocol's refusals (rewrite, rollback, fork) are tested in
// internal/witness; these test the command: its output, --json, loop
// mode, exit codes and usage.

const witnessOrigin = witnesstest.Origin

// witnessEnv is witnesstest's setup and the auditor login the witness
// command runs as.
type witnessEnv struct {
	*witnesstest.Env
	environ []string // DATABASE_URL: the auditor
}

func witnessSetup(t *testing.T) *witnessEnv {
	t.Helper()
	env := witnesstest.New(t)
	return &witnessEnv{Env: env, environ: []string{"DATABASE_URL=" + env.Auditor.URL}}
}

var waitUntil = witnesstest.WaitUntil

func (w *witnessEnv) args(extra ...string) []string {
	return append([]string{"witness", "--log-key", w.LogKey + ".pub", "--key", w.WitKey, "--state", w.State}, extra...)
}

// pass runs one witness pass.
func (w *witnessEnv) pass(t *testing.T, extra ...string) result {
	t.Helper()
	return execute(t, w.environ, "", w.args(append([]string{"--once"}, extra...)...)...)
}

// TestWitnessCosignsAndTheSealerPublishes: the first pass trusts the
// newest checkpoint and cosigns it, which publishes it; after more events
// a pass in loop mode proves the new checkpoint consistent with the state
// and cosigns it too.
func TestWitnessCosignsAndTheSealerPublishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := witnessSetup(t)
	w.Seal(t, w.Witness)
	c1 := w.Covering(t, w.AppendEvents(t, "toy:a", 5))
	if _, err := ledger.NewestCheckpoint(ctx, w.DB.Pool, true); !errors.Is(err, ledger.ErrNoCheckpoint) {
		t.Fatalf("a checkpoint was published before the witness cosigned it: %v", err)
	}

	r := w.pass(t)
	if r.code != exitOK || !strings.Contains(r.stdout, "TRUST ON FIRST USE") || !strings.Contains(r.stdout, "cosigned as witness.test") {
		t.Fatalf("first pass: %+v", r)
	}
	s1 := w.StateSize(t)
	if fi, err := os.Stat(w.State); err != nil || fi.Mode().Perm() != 0o600 || s1 < c1.Size {
		t.Fatalf("state: size %d (checkpoint %d), %v %v", s1, c1.Size, fi.Mode(), err)
	}
	w.CheckCosigned(t, s1)
	waitUntil(t, fmt.Sprintf("checkpoint %d published", s1), func() bool {
		c, err := ledger.NewestCheckpoint(ctx, w.DB.Pool, true)
		return err == nil && c.Size == s1
	})

	// More events, a newer checkpoint: the witness, now in loop mode,
	// verifies the consistency proof from s1 and cosigns.
	c2 := w.Covering(t, w.AppendEvents(t, "toy:b", 5))
	stop, out := startCommand(t, w.environ, w.args("--interval", "50ms", "--json")...)
	waitUntil(t, "the witness to cosign a newer checkpoint", func() bool {
		c, err := ledger.NewestCheckpoint(ctx, w.DB.Pool, true)
		return err == nil && c.Size >= c2.Size
	})
	if code := stop(); code != exitOK {
		t.Fatalf("witness loop exited %d:\n%s", code, out)
	}
	var p witness.Pass
	if err := json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &p); err != nil {
		t.Fatalf("witness --json: %v\n%s", err, out)
	}
	s2 := w.StateSize(t)
	if p.Result != "cosigned" || p.TrustOnFirstUse || p.StateSize != s1 || p.Size != s2 || s2 < c2.Size || p.ProofHashes == 0 {
		t.Fatalf("second pass %+v; state %d, checkpoint %d\n%s", p, s2, c2.Size, out)
	}
	w.CheckCosigned(t, s2)

	if r := w.pass(t); r.code != exitOK || !strings.Contains(r.stdout, "no new checkpoint") {
		t.Fatalf("third pass: %+v", r)
	}
	if n := w.Cosignatures(t); n != 2 {
		t.Fatalf("%d cosignatures, want 2", n)
	}
}

// TestWitnessRefusesACheckpointSignedByAnotherKey: a key with the log's
// name but not its key does not sign for it, for the newest checkpoint or
// for the state file.
func TestWitnessRefusesACheckpointSignedByAnotherKey(t *testing.T) {
	t.Parallel()
	w := witnessSetup(t)
	w.Seal(t)
	w.Covering(t, w.AppendEvents(t, "toy:a", 3))
	other := filepath.Join(t.TempDir(), "other.key")
	otherPub, err := ledger.GenerateNoteKey(witnessOrigin, other)
	if err != nil {
		t.Fatal(err)
	}
	byOther := []string{"witness", "--once", "--log-key", otherPub, "--key", w.WitKey, "--state", w.State}
	r := execute(t, w.environ, "", byOther...)
	if r.code != exitNotOK || !strings.Contains(r.stderr, "REFUSED (bad_signature): the newest checkpoint is not signed by the log key "+witnessOrigin) {
		t.Fatalf("pass with another log key: %+v", r)
	}
	if _, err := os.Stat(w.State); !errors.Is(err, os.ErrNotExist) || w.Cosignatures(t) != 0 {
		t.Fatalf("the witness accepted it: state %v, %d cosignatures", err, w.Cosignatures(t))
	}

	// The log key given as its text, not a file.
	pub, err := os.ReadFile(w.LogKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	r = execute(t, w.environ, "", "witness", "--once", "--log-key", strings.TrimSpace(string(pub)), "--key", w.WitKey, "--state", w.State)
	if r.code != exitOK || w.Cosignatures(t) != 1 {
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
	pub := w.LogKey + ".pub"
	for _, args := range [][]string{
		{"witness", "--key", w.WitKey, "--state", w.State},
		{"witness", "--log-key", pub, "--state", w.State},
		{"witness", "--log-key", pub, "--key", w.WitKey},
		{"witness", "--log-key", pub, "--key", w.WitKey, "--state", w.State, "--interval", "0s"},
		{"witness", "--log-key", pub, "--key", w.WitKey, "--state", w.State, "extra"},
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
	if _, err := os.Stat(w.State); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state written without a checkpoint: %v", err)
	}
}
