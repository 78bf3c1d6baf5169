package projector_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// logKeys writes a log key and returns its signer and verifier.
func logKeys(t *testing.T, origin string) (note.Signer, note.Verifier) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.key")
	if _, err := ledger.GenerateNoteKey(origin, path); err != nil {
		t.Fatal(err)
	}
	s, err := ledger.LoadNoteSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ledger.LoadNoteVerifier(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// delivered is the whole log in read_all order.
func delivered(t *testing.T, db ledger.DBTX) []ledger.Event {
	t.Helper()
	var all []ledger.Event
	var after ledger.Cursor
	for {
		evs, err := ledger.ReadAllOn(context.Background(), db, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return all
		}
		all = append(all, evs...)
		after = evs[len(evs)-1].Cursor()
	}
}

// independentRoot computes the root of the leaves of events[:size] with
// the library's compact range, apart from anything the sealer stored.
func independentRoot(t *testing.T, events []ledger.Event) []byte {
	t.Helper()
	r := (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewEmptyRange(0)
	for _, e := range events {
		h := ledger.LeafHash(e.Encoding())
		if err := r.Append(h[:], nil); err != nil {
			t.Fatal(err)
		}
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSealerSealsEveryEventInDeliveryOrderAndSignsCheckpoints runs two
// engines with the sealer (two serve processes) while writers commit out
// of position order, then checks the tree against the log from outside.
func TestSealerSealsEveryEventInDeliveryOrderAndSignsCheckpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	signer, verifier := logKeys(t, "test.execledger/log")
	cfg := ledger.SealerConfig{Signer: signer, CheckpointEvery: 25, CheckpointInterval: 50 * time.Millisecond}
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	for _, reg := range regs {
		cfg.Registerer = reg
		b.start(t, b.exec.Pool, fast, projector.Sealer(ledger.NewSealer(cfg)))
	}

	// A slow writer holds its transaction open while fast ones commit:
	// positions commit out of order.
	// It takes its transaction id first and its position last: delivery
	// order (tx_id, position) and position order disagree.
	slow, err := b.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, slow, `SELECT pg_current_xact_id()`)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() { b.appendEvents(t, fmt.Sprintf("fast:%d", w), "toy.fast", 40) })
	}
	wg.Wait()
	if _, err := b.store.AppendBatch(ctx, slow, []ledger.StreamAppend{{Stream: "slow:1", Expected: ledger.NoStream,
		Events: []ledger.NewEvent{{Type: "toy.slow", Payload: map[string]any{}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	last := b.appendEvents(t, "fast:last", "toy.fast", 1)[0]

	// Everything up to the last event is sealed and under a checkpoint.
	var cp ledger.Checkpoint
	waitFor(t, "a checkpoint over every toy event", func() bool {
		cp, err = ledger.NewestCheckpoint(ctx, b.db.Pool, true)
		if err != nil {
			return false
		}
		var covered bool
		err := b.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger.log_leaves WHERE position = $1 AND leaf_index < $2)`, last, int64(cp.Size)).Scan(&covered)
		return err == nil && covered
	})

	all := delivered(t, b.db.Pool)
	size, err := ledger.LogSize(ctx, b.db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if size > uint64(len(all)) || cp.Size > size {
		t.Fatalf("log size %d, checkpoint %d, %d events delivered", size, cp.Size, len(all))
	}
	// Leaves are dense and in delivery order, each the event's leaf hash.
	rows, err := b.db.Pool.Query(ctx, `SELECT l.leaf_index, l.position, n.hash FROM ledger.log_leaves l
JOIN ledger.log_nodes n ON n.level = 0 AND n.idx = l.leaf_index WHERE l.leaf_index < $1 ORDER BY l.leaf_index`, int64(size))
	if err != nil {
		t.Fatal(err)
	}
	type leafRow struct {
		idx, pos int64
		hash     []byte
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (leafRow, error) {
		var l leafRow
		return l, row.Scan(&l.idx, &l.pos, &l.hash)
	})
	if err != nil || uint64(len(got)) != size {
		t.Fatalf("%d leaves read of %d: %v", len(got), size, err)
	}
	for i, l := range got {
		want := ledger.LeafHash(all[i].Encoding())
		if l.idx != int64(i) || l.pos != all[i].Position || !bytes.Equal(l.hash, want[:]) {
			t.Fatalf("leaf %d: index %d position %d hash %x; delivered event %d is position %d, leaf hash %x", i, l.idx, l.pos, l.hash, i, all[i].Position, want)
		}
	}

	// The checkpoint is a signed C2SP note over the independently computed root.
	c, _, _, err := log.ParseCheckpoint(cp.Note, "test.execledger/log", verifier)
	if err != nil {
		t.Fatalf("checkpoint note: %v\n%s", err, cp.Note)
	}
	if root := independentRoot(t, all[:cp.Size]); c.Size != cp.Size || !bytes.Equal(c.Hash, root) || !bytes.Equal(cp.Root, root) {
		t.Fatalf("checkpoint size %d root %x (row %x); independent root of %d leaves %x", c.Size, c.Hash, cp.Root, cp.Size, root)
	}
	var payload string
	if err := b.db.Pool.QueryRow(ctx, `SELECT payload::text FROM ledger.events WHERE stream = 'log' AND type = 'checkpoint.signed' AND (payload ->> 'size')::bigint = $1`, int64(cp.Size)).Scan(&payload); err != nil {
		t.Fatalf("no checkpoint.signed for size %d: %v", cp.Size, err)
	}

	// The gauges of the process that sealed: integrated and signed sizes
	// as stored, witnessed = signed (no witness is required), sequenced
	// at least the integrated size.
	waitFor(t, "the gauges to show the newest checkpoint", func() bool {
		for _, reg := range regs {
			g := gauges(t, reg)
			newest, err := ledger.NewestCheckpoint(ctx, b.db.Pool, false)
			size, err2 := ledger.LogSize(ctx, b.db.Pool)
			if err == nil && err2 == nil && g["execledger_log_integrated_size"] == float64(size) &&
				g["execledger_log_signed_size"] == float64(newest.Size) && g["execledger_log_witnessed_size"] == float64(newest.Size) &&
				g["execledger_log_sequenced_size"] >= float64(size) && g["execledger_log_checkpoint_timestamp_seconds"] > 0 {
				return true
			}
		}
		return false
	})

	// Proofs read from the stored nodes verify against it.
	for _, leaf := range []uint64{0, cp.Size / 2, cp.Size - 1} {
		p, err := ledger.InclusionProof(ctx, b.db.Pool, leaf, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		h := ledger.LeafHash(all[leaf].Encoding())
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, leaf, cp.Size, h[:], p, cp.Root); err != nil {
			t.Errorf("inclusion of leaf %d in %d: %v", leaf, cp.Size, err)
		}
	}
	cps, err := ledger.Checkpoints(ctx, b.db.Pool, 0, cp.Size, 1000)
	if err != nil || len(cps) < 2 {
		t.Fatalf("want at least two checkpoints, got %d: %v", len(cps), err)
	}
	for k := 1; k < len(cps); k++ {
		p, err := ledger.ConsistencyProof(ctx, b.db.Pool, cps[k-1].Size, cps[k].Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, cps[k-1].Size, cps[k].Size, p, cps[k-1].Root, cps[k].Root); err != nil {
			t.Errorf("consistency %d -> %d: %v", cps[k-1].Size, cps[k].Size, err)
		}
	}
}

// TestSealerRefusesAnEventWhoseBytesDoNotMatchItsHash: a superuser who
// rewrites an event before it is sealed, hash column included, does not
// get it sealed: the log stops there and says why.
func TestSealerRefusesAnEventWhoseBytesDoNotMatchItsHash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	good := b.appendEvents(t, "toy:a", "toy.fine", 3)
	bad := b.appendEvents(t, "toy:b", "toy.forged", 1)[0]
	mustExec(t, b.db.Pool, `ALTER TABLE ledger.events ALTER COLUMN hash DROP EXPRESSION`)
	mustExec(t, b.db.Pool, `ALTER TABLE ledger.events DISABLE TRIGGER events_no_update`)
	mustExec(t, b.db.Pool, `ALTER TABLE ledger.events ENABLE TRIGGER events_no_update`) // ENABLE ALWAYS was dropped by DISABLE
	mustExec(t, b.db.Pool, `ALTER TABLE ledger.events DISABLE TRIGGER events_no_update`)
	mustExec(t, b.db.Pool, `UPDATE ledger.events SET hash = sha256('forged') WHERE position = $1`, bad)
	// New events (projection.failed among them) still get their hash.
	mustExec(t, b.db.Pool, `CREATE FUNCTION public.rehash() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.hash := ledger.event_hash(NEW.stream, NEW.version, NEW.type, NEW.payload, NEW.metadata, NEW.recorded_at); RETURN NEW; END $$`)
	mustExec(t, b.db.Pool, `CREATE TRIGGER rehash BEFORE INSERT ON ledger.events FOR EACH ROW EXECUTE FUNCTION public.rehash()`)

	e, _ := b.start(t, b.exec.Pool, fast, projector.Sealer(ledger.NewSealer(ledger.SealerConfig{})))
	waitFor(t, "the log to fail", func() bool { return statusOf(t, e, "log").State == "failed" })
	st := statusOf(t, e, "log")
	if st.FailedAt == nil || st.FailedAt.Position != bad || !strings.Contains(st.LastError, "stored hash does not match") {
		t.Fatalf("log status %+v, want failed at position %d with a hash mismatch", st, bad)
	}
	var leaves []int64
	rows, err := b.db.Pool.Query(ctx, `SELECT position FROM ledger.log_leaves ORDER BY leaf_index`)
	if err != nil {
		t.Fatal(err)
	}
	if leaves, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	if len(leaves) < len(good) || leaves[len(leaves)-1] >= bad {
		t.Fatalf("sealed %v; want the events before %d and not it", leaves, bad)
	}
	if _, err := b.exec.Pool.Exec(ctx, `SELECT ledger.projection_rebuild_begin('log')`); err == nil {
		t.Fatal("the log could be rebuilt")
	}
}

// TestLogAppendTakesOnlyTheNextEvents: ledger.log_append, as the
// executor login, refuses a batch that skips events, nodes that do not
// match the leaves, and a stale size.
func TestLogAppendTakesOnlyTheNextEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, "toy:a", "toy.fine", 3)
	var all []ledger.Event
	waitFor(t, "three events delivered", func() bool { all = delivered(t, b.db.Pool); return len(all) >= 3 })
	leaf := func(i int) []byte { h := ledger.LeafHash(all[i].Encoding()); return h[:] }
	call := func(fromTx uint64, fromPos int64, to ledger.Event, size int64, levels []int16, idx []int64, hashes [][]byte) error {
		_, err := b.exec.Pool.Exec(ctx, `SELECT ledger.log_append($1::text::xid8, $2, $3::text::xid8, $4, $5, $6, $7, $8)`,
			fmt.Sprint(fromTx), fromPos, fmt.Sprint(to.TxID), to.Position, size, levels, idx, hashes)
		return err
	}
	// Skipping the first event: the checkpoint is at zero, not there.
	if err := call(all[0].TxID, all[0].Position, all[1], 0, []int16{0}, []int64{0}, [][]byte{leaf(1)}); err == nil {
		t.Error("log_append took a batch that skips the first event")
	}
	// Two events with one leaf hash.
	if err := call(0, 0, all[1], 0, []int16{0}, []int64{0}, [][]byte{leaf(0)}); err == nil {
		t.Error("log_append took two events with one leaf hash")
	}
	// A stale size.
	if err := call(0, 0, all[0], 5, []int16{0}, []int64{5}, [][]byte{leaf(0)}); err == nil {
		t.Error("log_append took a size the log does not have")
	}
	if err := call(0, 0, all[0], 0, []int16{0}, []int64{0}, [][]byte{leaf(0)}); err != nil {
		t.Fatalf("the right batch: %v", err)
	}
	// The log is append-only, for its owner too.
	for _, sql := range []string{`DELETE FROM ledger.log_leaves`, `UPDATE ledger.log_nodes SET hash = sha256('x')`, `TRUNCATE ledger.log_nodes`} {
		if _, err := b.db.Pool.Exec(ctx, sql); err == nil {
			t.Errorf("%s: allowed", sql)
		}
	}
}

// gauges reads reg's gauges by name.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if g := m.GetGauge(); g != nil {
				out[mf.GetName()] = g.GetValue()
			}
		}
	}
	return out
}
