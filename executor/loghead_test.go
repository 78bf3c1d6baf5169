package executor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// TestAttestationsNameTheNewestCheckpoint: with the sealer signing, an
// attestation names the log's newest checkpoint at signing time, and the
// attestation itself lands in the log after it.
func TestAttestationsNameTheNewestCheckpoint(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	key := filepath.Join(t.TempDir(), "log.key")
	if _, err := ledger.GenerateNoteKey("test.execledger/log", key); err != nil {
		t.Fatal(err)
	}
	signer, err := ledger.LoadNoteSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := projector.New(e.execSQL.Pool, projector.Config{PollInterval: 20 * time.Millisecond},
		projector.Sealer(ledger.NewSealer(ledger.SealerConfig{Signer: signer, CheckpointInterval: 20 * time.Millisecond})))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = eng.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	first := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "one"}})
	await(t, e.alice, first)
	deadline := time.Now().Add(waitLong)
	for {
		if _, err := ledger.NewestCheckpoint(ctx, e.db.Pool, false); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint signed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * logHeadMaxAge) // the executor's copy is stale: it reads the checkpoint again
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "two"}})
	await(t, e.alice, id)

	evs := e.events(t, id)
	last := evs[len(evs)-1]
	if last.Type != "execution.completed" {
		t.Fatalf("last event %s", last.Type)
	}
	var p struct{ Envelope string }
	if err := json.Unmarshal(last.Payload, &p); err != nil {
		t.Fatal(err)
	}
	st, err := attest.Verify([]byte(p.Envelope), e.pub)
	if err != nil {
		t.Fatal(err)
	}
	named := st.Predicate.LogCheckpoint
	if named == nil {
		t.Fatal("the attestation names no checkpoint")
	}
	cp, err := ledger.CheckpointAt(ctx, e.db.Pool, named.Size)
	if err != nil {
		t.Fatalf("the named checkpoint %+v: %v", named, err)
	}
	if named.Origin != "test.execledger/log" || named.RootHash != base64.StdEncoding.EncodeToString(cp.Root) {
		t.Fatalf("named %+v, stored root %x origin %s", named, cp.Root, cp.Origin)
	}
	// The attestation is sealed after the checkpoint it names.
	var leaf int64
	for time.Now().Before(deadline) {
		if err = e.db.Pool.QueryRow(ctx, `SELECT leaf_index FROM ledger.log_leaves WHERE position = $1`, last.Position).Scan(&leaf); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || uint64(leaf) < named.Size {
		t.Fatalf("attestation at leaf %d (%v), names checkpoint of size %d", leaf, err, named.Size)
	}
}
