//go:build unix

package executor

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/internal/testrepl"
	"github.com/execledger/execledger/ledger"
)

// TestChaosFailover kills the primary (SIGKILL to every process of it)
// while mixed requests flow, and promotes its synchronous standby. The
// executors (two processes, each also running the read models and the
// sealer) and the submitters have a URL naming both servers with
// target_session_attrs=read-write, and find the new primary by
// themselves. What must hold:
//   - every submit that returned an id exists on the new primary and is
//     final exactly once (submits are retried with their idempotency key
//     until they return an id: the same id, never a second request);
//   - no unsafe call runs twice; outcome_unknown ⇔ unsafe, rescued after
//     it started; every other request succeeded; every attestation
//     verifies;
//   - a witness that checked checkpoints before the failover accepts
//     those after it (each a consistency proof from the last it
//     accepted), and the whole log verifies (export.VerifyDB) across it.
//
// docs/replication.md says why, and docs/chaos.md lists the figures.
func TestChaosFailover(t *testing.T) {
	t.Parallel()
	n := chaosSize(240, 3000)
	k := newChaosKit(t)
	pair := testrepl.New(t, testrepl.Options{Sync: true})
	ctx := context.Background()
	writerURL := pair.WriterURL()
	pool, err := pgxpool.New(ctx, writerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "INSERT INTO ledger.principals VALUES ('postgres', 'alice')"); err != nil {
		t.Fatal(err)
	}
	noteKey := filepath.Join(k.dir, "log.key")
	if _, err := ledger.GenerateNoteKey("execledger.test/failover", noteKey); err != nil {
		t.Fatal(err)
	}
	logKey, err := ledger.LoadNoteVerifier(noteKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	w := &failoverWitness{key: logKey, pool: pool}
	witnessCtx, stopWitness := context.WithCancel(ctx)
	witnessDone := make(chan struct{})
	go func() { defer close(witnessDone); w.run(witnessCtx) }()
	defer func() { stopWitness(); <-witnessDone }()

	// Submitters: four goroutines take requests from..to in turn; each
	// submit is retried (same idempotency key) until it returns an id.
	client := ledger.NewClient(pool)
	defer client.Close()
	acked := make([]uuid.UUID, n)
	var failedSubmits atomic.Int64
	deadline := time.Now().Add(patienceFor(t))
	submit := func(from, to int) {
		var next atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < to; i = int(next.Add(1) - 1) {
					p := mixedInput(i)
					p.IdempotencyKey = fmt.Sprint("k", i)
					for {
						id, err := client.Submit(ctx, p)
						if err == nil {
							acked[i] = id
							break
						}
						failedSubmits.Add(1)
						if time.Now().After(deadline) {
							t.Errorf("submit %d: %v", i, err)
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	// The first half is submitted before the executors start, so that
	// many are in flight at the kill whatever the machine's load.
	killAt := n / 2
	submit(0, killAt)
	// At full size (make chaos) leases are 2 s, so that a failover
	// outlasts some and their rescue is tested too. In make test, on a
	// machine that may be loaded, a failover can outlast 2 s for any
	// call, and a builtin sleep that loses its lease ends failed
	// (runtime_failure, "the executor lost its lease"), which is what a
	// lost lease means, not a lost request: there leases outlast it.
	lease := "CHAOS_LEASE=" + map[bool]string{true: "2s", false: "1m"}[*chaosFull]
	a := k.startChild(t, writerURL, "exec-a", "CHAOS_NOTE_KEY="+noteKey, lease)
	b := k.startChild(t, writerURL, "exec-b", "CHAOS_NOTE_KEY="+noteKey, lease)
	// The kill, while requests run: a third of those submitted are final,
	// and the witness has accepted a checkpoint.
	for finishedCountQuiet(pool) < killAt/3 || !w.accepted(1) {
		if time.Now().After(deadline) {
			t.Fatal("no request final and no checkpoint accepted before the kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
	finalAtKill := finishedCountQuiet(pool)
	killTime := time.Now()
	if err := pair.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	promoted := make(chan error, 1)
	go func() {
		// The HA manager's part: promote the standby, once a submitter
		// has found no primary (so that the outage is one the submitters
		// see).
		for failedSubmits.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		pctx, cancel := context.WithTimeout(ctx, patienceFor(t))
		defer cancel()
		promoted <- pair.Standby.Promote(pctx)
	}()
	// The second half during and after the failover.
	submit(killAt, n)
	if err := <-promoted; err != nil {
		t.Fatal(err)
	}
	waitAllFinal(t, pool, n)

	// Every acknowledged id exists, once; no other request exists.
	var found int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM ledger.request_status WHERE id = ANY($1)", acked).Scan(&found); err != nil || found != n {
		t.Errorf("%d of %d acknowledged requests on the new primary (%v)", found, n, err)
	}
	ran := k.journalCounts(t)
	var unknown, rescued int
	for _, o := range k.outcomes(t, pool) {
		if !o.attested {
			t.Errorf("%s (%s %s): no verifiable attestation", o.id, o.tool, o.state)
		}
		if o.claims > 1 {
			rescued++
		}
		unsafe := o.tool == "test.journal"
		switch {
		case ran[o.id] > 1:
			t.Errorf("%s ran %d times", o.id, ran[o.id])
		case unsafe && o.rescuedStarted:
			if o.state != "failed" || o.kind != "outcome_unknown" {
				t.Errorf("%s started before a lease expired but ended %s/%s", o.id, o.state, o.kind)
			}
			unknown++
		case o.state != "succeeded":
			t.Errorf("%s (%s) ended %s/%s", o.id, o.tool, o.state, o.kind)
		case unsafe && ran[o.id] != 1:
			t.Errorf("%s succeeded but ran %d times", o.id, ran[o.id])
		}
	}

	// The log: sealed to its end, verified from leaf 0 across the
	// failover, and accepted by the witness after it.
	// Every event but the sealer's checkpoint.signed (which wait for no
	// checkpoint of their own) is a leaf under a checkpoint the witness
	// accepted.
	var sealedTo int64
	waitFor(t, "every request's events sealed", func() bool {
		var unsealed int64
		err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE l.position IS NULL), coalesce(max(l.leaf_index) + 1, 0)
FROM ledger.events e LEFT JOIN ledger.log_leaves l ON l.position = e.position WHERE e.type <> 'checkpoint.signed'`).Scan(&unsealed, &sealedTo)
		return err == nil && unsealed == 0
	})
	for deadline := time.Now().Add(patienceFor(t)); !w.accepted(sealedTo); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the witness to accept a checkpoint of size %d or more: %s", sealedTo, w)
		}
	}
	a.terminate(t)
	b.terminate(t)
	stopWitness()
	<-witnessDone
	if w.refusal != nil {
		t.Fatalf("witness refused: %v", w.refusal)
	}
	sizes := w.sizesAround(killTime)
	if sizes.before == 0 || sizes.after <= sizes.before {
		t.Errorf("witness accepted checkpoints up to size %d before the kill and %d after it: want some on both sides", sizes.before, sizes.after)
	}
	rep, err := export.VerifyDB(ctx, pool, bundle.Keys{Log: logKey, Attestation: []ed25519.PublicKey{k.pub}}, export.VerifyOptions{})
	if err != nil || !rep.OK || rep.Requests != int64(n) || !rep.ReadModel.Checked {
		t.Fatalf("verify --db after the failover: %+v, %v", rep, err)
	}
	if finalAtKill >= killAt {
		t.Errorf("every request submitted was final before the kill: nothing was in flight")
	}
	t.Logf("%d requests; primary killed after %d submits with %d final; %d submit attempts failed during the failover; %d claimed again, %d outcome_unknown; "+
		"witness accepted size %d before and %d after; verify: %d events, %d checkpoints",
		n, killAt, finalAtKill, failedSubmits.Load(), rescued, unknown, sizes.before, sizes.after, rep.Events, rep.Checkpoints)
}

// patienceFor bounds a wait that load makes slow: what is left of the
// test's -timeout less a minute (ten minutes without one).
func patienceFor(t *testing.T) time.Duration {
	d, ok := t.Deadline()
	if !ok {
		return 10 * time.Minute
	}
	return max(time.Until(d)-time.Minute, time.Second)
}

func (w *failoverWitness) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("witness at size %d, last error %v", w.lastSize, w.lastErr)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patienceFor(t)); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func finishedCountQuiet(pool *pgxpool.Pool) int {
	var n int
	_ = pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.request_status WHERE finished_at IS NOT NULL").Scan(&n)
	return n
}

// failoverWitness does what `execledger witness` does on each pass
// (cmd/execledger/witness.go), without cosigning: it reads the newest
// checkpoint through the writer URL, checks its signature, and accepts
// it only when it extends the last one accepted (same size: same root;
// larger: a consistency proof from the log that verifies). A database
// error is retried, as the witness's loop does; a refusal stops it.
type failoverWitness struct {
	key  note.Verifier
	pool *pgxpool.Pool

	mu       sync.Mutex
	last     *log.Checkpoint
	history  []acceptedCheckpoint
	refusal  error
	lastErr  error
	lastSize uint64
}

type acceptedCheckpoint struct {
	size uint64
	at   time.Time
}

func (w *failoverWitness) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := w.pass(ctx); err != nil {
			w.mu.Lock()
			w.lastErr = err
			w.mu.Unlock()
			var r refusalError
			if errors.As(err, &r) {
				w.mu.Lock()
				w.refusal = err
				w.mu.Unlock()
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type refusalError struct{ msg string }

func (r refusalError) Error() string { return r.msg }

func (w *failoverWitness) pass(ctx context.Context) error {
	row, err := ledger.NewestCheckpoint(ctx, w.pool, false)
	if err != nil {
		return err // no checkpoint yet, or the database is away
	}
	cp, _, _, err := log.ParseCheckpoint(row.Note, w.key.Name(), w.key)
	if err != nil {
		return refusalError{fmt.Sprintf("checkpoint %d: bad signature: %v", row.Size, err)}
	}
	w.mu.Lock()
	prev := w.last
	w.mu.Unlock()
	if prev != nil {
		switch {
		case cp.Size < prev.Size:
			return refusalError{fmt.Sprintf("rollback: size %d after %d", cp.Size, prev.Size)}
		case cp.Size == prev.Size && string(cp.Hash) != string(prev.Hash):
			return refusalError{fmt.Sprintf("fork at size %d", cp.Size)}
		case cp.Size == prev.Size:
			return nil
		}
		hashes, err := ledger.ConsistencyProof(ctx, w.pool, prev.Size, cp.Size)
		if err != nil {
			return err
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, prev.Size, cp.Size, hashes, prev.Hash, cp.Hash); err != nil {
			return refusalError{fmt.Sprintf("inconsistent: %d to %d: %v", prev.Size, cp.Size, err)}
		}
	}
	w.mu.Lock()
	w.last = cp
	w.history = append(w.history, acceptedCheckpoint{size: cp.Size, at: time.Now()})
	w.lastSize = cp.Size
	w.mu.Unlock()
	return nil
}

// accepted reports whether the witness has accepted a checkpoint of at
// least size.
func (w *failoverWitness) accepted(size int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refusal != nil || w.lastSize >= uint64(size)
}

// sizesAround is the largest size accepted before the primary died and the
// largest accepted in all.
func (w *failoverWitness) sizesAround(died time.Time) (s struct{ before, after uint64 }) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.history {
		if h.at.Before(died) {
			s.before = max(s.before, h.size)
		}
		s.after = max(s.after, h.size)
	}
	return s
}
