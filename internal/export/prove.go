package export

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/execledger/execledger/internal/contract"

	tlog "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/execledger/execledger/ledger"
)

// EventProof is one event of a request and, when the checkpoint holds
// it, its proof.
type EventProof struct {
	Event ledger.Event
	Leaf  *uint64 // nil while the event is not sealed
	// Proof is the event's C2SP tlog-proof against the checkpoint: its
	// inclusion proof, the checkpoint's note with its cosignatures, and as
	// extra data the event's canonical encoding (the leaf's data). Nil
	// when the checkpoint does not hold the event, or Mismatch.
	Proof *tlog.TLogProof
	// Mismatch: the event's bytes do not hash to the leaf hash the log
	// sealed for it (it was changed after it was sealed); no proof.
	Mismatch bool
}

// Proofs are a request's events proved against one checkpoint.
type Proofs struct {
	Checkpoint *ledger.Checkpoint // the newest published; nil when there is none
	Events     []EventProof       // by version
}

// Provable counts the events with a proof.
func (p Proofs) Provable() int {
	n := 0
	for _, e := range p.Events {
		if e.Proof != nil {
			n++
		}
	}
	return n
}

// Prove proves each event of request id (stream request:<id>) against the
// newest published checkpoint, reading every proof's nodes in one query.
// It returns ErrNoRequest when the stream has no event.
func Prove(ctx context.Context, db ledger.DBTX, id string) (Proofs, error) {
	var ps Proofs
	events, err := streamLeaves(ctx, db, contract.RequestStream(id))
	if err != nil {
		return ps, err
	}
	if len(events) == 0 {
		return ps, fmt.Errorf("export: %w %s", ErrNoRequest, id)
	}
	ps.Events = events
	cp, err := ledger.NewestCheckpoint(ctx, db, true)
	if errors.Is(err, ledger.ErrNoCheckpoint) {
		return ps, nil
	}
	if err != nil {
		return ps, fmt.Errorf("export: %w", err)
	}
	ps.Checkpoint = &cp
	return ps, inclusionProofs(ctx, db, cp, ps.Events)
}

// streamLeaves reads a stream's events by version, each with its leaf
// when sealed, checked against the leaf hash the log stores.
func streamLeaves(ctx context.Context, db ledger.DBTX, stream string) ([]EventProof, error) {
	rows, err := db.Query(ctx, queryStreamProofs, stream)
	if err != nil {
		return nil, fmt.Errorf("export: read %s: %w", stream, err)
	}
	defer rows.Close()
	var out []EventProof
	for rows.Next() {
		var e ledger.Event
		var hash, leafHash []byte
		var leaf *int64
		var recordedAt time.Time
		if err := rows.Scan(&e.Position, &e.Stream, &e.Version, &e.Type, &e.Payload, &e.Metadata, &recordedAt, &hash,
			&leaf, &leafHash); err != nil {
			return nil, fmt.Errorf("export: read %s: %w", stream, err)
		}
		e.RecordedAt = recordedAt
		copy(e.Hash[:], hash)
		p := EventProof{Event: e}
		if leaf != nil {
			l := uint64(*leaf)
			p.Leaf = &l
			p.Mismatch = len(leafHash) != 32 || ledger.LeafHash(e.Encoding()) != [32]byte(leafHash)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export: read %s: %w", stream, err)
	}
	return out, nil
}

// inclusionProofs fills in the proofs of the events cp holds.
func inclusionProofs(ctx context.Context, db ledger.DBTX, cp ledger.Checkpoint, events []EventProof) error {
	s := newNodeSet()
	nodes := make([]proof.Nodes, len(events))
	at := make([][]int, len(events))
	held := make([]bool, len(events))
	for i, e := range events {
		if held[i] = e.Leaf != nil && *e.Leaf < cp.Size && !e.Mismatch; !held[i] {
			continue
		}
		var err error
		if nodes[i], err = proof.Inclusion(*e.Leaf, cp.Size); err != nil {
			return fmt.Errorf("export: inclusion proof of leaf %d: %w", *e.Leaf, err)
		}
		at[i] = s.add(nodes[i].IDs)
	}
	if err := s.read(ctx, db); err != nil {
		return err
	}
	note := cp.FullNote()
	for i := range events {
		if !held[i] {
			continue
		}
		hashes, err := nodes[i].Rehash(s.hashes(at[i]), rfc6962.DefaultHasher.HashChildren)
		if err != nil {
			return fmt.Errorf("export: inclusion proof of leaf %d: %w", *events[i].Leaf, err)
		}
		p := &tlog.TLogProof{Index: *events[i].Leaf, Checkpoint: note, ExtraData: events[i].Event.Encoding(),
			Hashes: make([][32]byte, len(hashes))}
		for j, h := range hashes {
			p.Hashes[j] = [32]byte(h)
		}
		events[i].Proof = p
	}
	return nil
}
