package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/transparency-dev/formats/log"
	tlog "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/export"
)

// checkProof checks e's proof as an auditor holding only the log key
// would: parsed back from its text, the checkpoint opens with the key,
// and the leaf hash of the proof's entry (the event's encoding) is
// included under the checkpoint's root.
func checkProof(e export.EventProof, root []byte, logKey note.Verifier) error {
	if e.Proof == nil {
		return errors.New("no proof")
	}
	var p tlog.TLogProof
	if err := p.Unmarshal(e.Proof.Marshal()); err != nil {
		return err
	}
	if !bytes.Equal(p.ExtraData, e.Event.Encoding()) || p.Index != *e.Leaf {
		return fmt.Errorf("the proof's entry is not the event at leaf %d", *e.Leaf)
	}
	n, err := note.Open(p.Checkpoint, note.VerifierList(logKey))
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return err
	}
	if !bytes.Equal(cp.Hash, root) {
		return errors.New("the proof's checkpoint is not the one proved against")
	}
	hashes := make([][]byte, len(p.Hashes))
	for i := range p.Hashes {
		hashes[i] = p.Hashes[i][:]
	}
	return proof.VerifyInclusion(rfc6962.DefaultHasher, p.Index, cp.Size, rfc6962.DefaultHasher.HashLeaf(p.ExtraData), hashes, cp.Hash)
}

// BenchmarkProve proves one request's events (about seven) against the
// newest published checkpoint of a log of about 100,000 leaves.
func BenchmarkProve(b *testing.B) {
	l, ids := benchLog(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		ps, err := export.Prove(ctx, l.auditor.Pool, ids[i%len(ids)].String())
		if err != nil || ps.Provable() == 0 {
			b.Fatal(err, ps.Provable())
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(i), "ms/request")
}
