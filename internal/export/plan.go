package export

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/execledger/execledger/internal/contract"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
)

// checkpointPage is how many checkpoints one query reads.
const checkpointPage = 1000

// plan is what a bundle holds: its header, its checkpoints and its leaves,
// all below the newest checkpoint's size. produce reads them and emits
// them as records.
type plan struct {
	header bundle.Header
	newest ledger.Checkpoint
	// full: every leaf [0, newest.Size) and every checkpoint up to it.
	// Else the leaves and the checkpoints (besides the newest) listed.
	full        bool
	span        *bundle.LeafRange // an archive: the leaves [Begin, End) and every checkpoint
	leaves      []uint64          // ascending
	checkpoints []uint64          // ascending, below newest.Size

	// What produce emitted, once it returned.
	events, requests, ranges, written int64
	// progress, if set, is called with the events emitted after each chunk.
	progress func(done int64)
}

// total is how many leaves the plan reads.
func (p *plan) total() int64 {
	switch {
	case p.full:
		return int64(p.newest.Size)
	case p.span != nil:
		return int64(p.span.End - p.span.Begin)
	}
	return int64(len(p.leaves))
}

// produce emits the bundle's records in order: header, checkpoints with
// the consistency proofs between them, ranges each followed by their
// events, end.
func (p *plan) produce(ctx context.Context, db ledger.DBTX, emit func(bundle.Record) error) error {
	if err := emit(&p.header); err != nil {
		return err
	}
	if err := p.produceCheckpoints(ctx, db, emit); err != nil {
		return err
	}
	if err := p.produceLeaves(ctx, db, emit); err != nil {
		return err
	}
	return emit(&bundle.End{Events: p.events, Checkpoints: p.written})
}

func (p *plan) produceCheckpoints(ctx context.Context, db ledger.DBTX, emit func(bundle.Record) error) error {
	var prev *ledger.Checkpoint
	page := func(cs []ledger.Checkpoint) error {
		sizes := make([]uint64, 0, len(cs)+1)
		if prev != nil {
			sizes = append(sizes, prev.Size)
		}
		for _, c := range cs {
			sizes = append(sizes, c.Size)
		}
		// proofs[k] is from sizes[k] to sizes[k+1]; cs[i] is sizes[i+off].
		proofs, err := consistencyProofs(ctx, db, sizes)
		if err != nil {
			return err
		}
		off := len(sizes) - len(cs)
		for i, c := range cs {
			if err := emit(&bundle.Checkpoint{Size: c.Size, Root: c.Root, Note: string(c.FullNote())}); err != nil {
				return err
			}
			p.written++
			if k := i + off - 1; k >= 0 {
				if err := emit(&bundle.Consistency{From: sizes[k], To: c.Size, Hashes: proofs[k]}); err != nil {
					return err
				}
			}
		}
		if len(cs) > 0 {
			prev = &cs[len(cs)-1]
		}
		return nil
	}
	if !p.full && p.span == nil {
		cs := make([]ledger.Checkpoint, 0, len(p.checkpoints)+1)
		for _, size := range p.checkpoints {
			c, err := ledger.CheckpointAt(ctx, db, size)
			if errors.Is(err, ledger.ErrNoCheckpoint) {
				continue // an attestation names a checkpoint the log does not hold: the verifier reports it
			}
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			cs = append(cs, c)
		}
		return page(append(cs, p.newest))
	}
	for from := uint64(0); ; {
		cs, err := ledger.Checkpoints(ctx, db, from, p.newest.Size, checkpointPage)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := page(cs); err != nil {
			return err
		}
		if len(cs) < checkpointPage {
			break
		}
		from = cs[len(cs)-1].Size + 1
	}
	if prev == nil || prev.Size != p.newest.Size {
		return fmt.Errorf("export: checkpoint %d is no longer in ledger.checkpoints", p.newest.Size)
	}
	return nil
}

// produceLeaves emits the leaves, a chunk at a time: each run of
// consecutive leaves with events is one range.
func (p *plan) produceLeaves(ctx context.Context, db ledger.DBTX, emit func(bundle.Record) error) error {
	size := p.newest.Size
	chunk := func(events []bundle.Event) error {
		runs := runsOf(events)
		proofs, err := rangeProofs(ctx, db, runs, size)
		if err != nil {
			return err
		}
		for i, r := range runs {
			if err := emit(&proofs[i]); err != nil {
				return err
			}
			p.ranges++
			for j := range r.events {
				e := &r.events[j]
				if e.Version == 1 && strings.HasPrefix(e.Stream, contract.RequestPrefix) {
					p.requests++
				}
				if err := emit(e); err != nil {
					return err
				}
				p.events++
			}
		}
		if p.progress != nil {
			p.progress(p.events)
		}
		return nil
	}
	if p.full || p.span != nil {
		from, to := uint64(0), size
		if p.span != nil {
			from, to = p.span.Begin, p.span.End
		}
		for begin := from; begin < to; begin += chunkLeaves {
			events, err := readLeafRange(ctx, db, begin, min(begin+chunkLeaves, to))
			if err != nil {
				return err
			}
			if err := chunk(events); err != nil {
				return err
			}
		}
		return nil
	}
	for begin := 0; begin < len(p.leaves); begin += chunkLeaves {
		list := p.leaves[begin:min(begin+chunkLeaves, len(p.leaves))]
		idx := make([]int64, len(list))
		for i, l := range list {
			idx[i] = int64(l)
		}
		events, err := readLeaves(ctx, db, queryLeafList, idx)
		if err != nil {
			return err
		}
		if err := chunk(events); err != nil {
			return err
		}
	}
	return nil
}

// logFingerprint is the log key's fingerprint (bundle.Fingerprint) as the
// checkpoint's note names it: the origin and the key hash of its
// signature line. The database does not hold the key itself.
func logFingerprint(c ledger.Checkpoint) string {
	_, sigs, _ := bytes.Cut(c.Note, []byte("\n\n"))
	for line := range strings.Lines(string(sigs)) {
		name, sig, ok := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "— "), " ")
		if !ok || name != c.Origin {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(sig); err == nil && len(b) >= 4 {
			return fmt.Sprintf("%s+%08x", name, binary.BigEndian.Uint32(b))
		}
	}
	return c.Origin
}

// witnessFingerprints names the witnesses that cosigned c.
func witnessFingerprints(c ledger.Checkpoint) []string {
	var ws []string
	for _, s := range c.Cosignatures {
		ws = append(ws, fmt.Sprintf("%s+%08x", s.KeyName, s.KeyHash))
	}
	return ws
}
