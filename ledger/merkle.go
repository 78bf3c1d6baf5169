package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The Merkle log (migration 011) is an RFC 6962 tree over every event in
// delivery order. ledger.log_nodes stores the hash of each perfect subtree
// by (level, index); the functions here read proofs out of it with the
// node sets transparency-dev/merkle computes (compact ranges and
// proof.Nodes), one query each.

// ErrNoCheckpoint is returned when the log has no (published) checkpoint yet.
var ErrNoCheckpoint = errors.New("ledger: the log has no checkpoint yet")

// ErrLogNodeMissing is returned when a node a proof needs is not stored:
// the tree is smaller than asked, or a node was removed.
var ErrLogNodeMissing = errors.New("ledger: Merkle log node missing")

// rangeFactory builds RFC 6962 compact ranges.
var rangeFactory = &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// NewRange returns the compact range [begin, end) with the given subtree
// hashes (compact.RangeNodes order), for verifiers.
func NewRange(begin, end uint64, hashes [][]byte) (*compact.Range, error) {
	return rangeFactory.NewRange(begin, end, hashes)
}

// LogSize returns the number of leaves in the log.
func LogSize(ctx context.Context, db DBTX) (uint64, error) {
	var n int64
	if err := db.QueryRow(ctx, queryLogSize).Scan(&n); err != nil {
		return 0, fmt.Errorf("ledger: log size: %w", err)
	}
	return uint64(n), nil
}

// ReadNodes returns the stored hashes of ids, in their order.
func ReadNodes(ctx context.Context, db DBTX, ids []compact.NodeID) ([][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	levels := make([]int16, len(ids))
	idx := make([]int64, len(ids))
	for i, id := range ids {
		levels[i], idx[i] = int16(id.Level), int64(id.Index)
	}
	rows, err := db.Query(ctx, queryReadNodes, levels, idx)
	if err != nil {
		return nil, fmt.Errorf("ledger: read log nodes: %w", err)
	}
	hashes := make([][]byte, len(ids))
	for rows.Next() {
		var ord int
		var h []byte
		if err := rows.Scan(&ord, &h); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: read log nodes: %w", err)
		}
		hashes[ord-1] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read log nodes: %w", err)
	}
	for i, h := range hashes {
		if h == nil {
			return nil, fmt.Errorf("%w: level %d index %d", ErrLogNodeMissing, ids[i].Level, ids[i].Index)
		}
	}
	return hashes, nil
}

// TreeRange returns the compact range [0, size) of the stored tree, from
// which the root hash and further appends follow.
func TreeRange(ctx context.Context, db DBTX, size uint64) (*compact.Range, error) {
	hashes, err := ReadNodes(ctx, db, compact.RangeNodes(0, size, nil))
	if err != nil {
		return nil, err
	}
	return rangeFactory.NewRange(0, size, hashes)
}

// RootHash returns the root of the stored tree at size (RFC 6962's empty
// root for 0).
func RootHash(ctx context.Context, db DBTX, size uint64) ([]byte, error) {
	if size == 0 {
		return rfc6962.DefaultHasher.EmptyRoot(), nil
	}
	r, err := TreeRange(ctx, db, size)
	if err != nil {
		return nil, err
	}
	return r.GetRootHash(nil)
}

// InclusionProof returns the RFC 6962 inclusion proof of leaf index in
// the tree of size size.
func InclusionProof(ctx context.Context, db DBTX, index, size uint64) ([][]byte, error) {
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("ledger: inclusion proof: %w", err)
	}
	return readProof(ctx, db, nodes)
}

// ConsistencyProof returns the RFC 6962 consistency proof between the
// trees of sizes size1 and size2.
func ConsistencyProof(ctx context.Context, db DBTX, size1, size2 uint64) ([][]byte, error) {
	nodes, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("ledger: consistency proof: %w", err)
	}
	return readProof(ctx, db, nodes)
}

func readProof(ctx context.Context, db DBTX, nodes proof.Nodes) ([][]byte, error) {
	hashes, err := ReadNodes(ctx, db, nodes.IDs)
	if err != nil {
		return nil, err
	}
	p, err := nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
	if err != nil {
		return nil, fmt.Errorf("ledger: proof: %w", err)
	}
	return p, nil
}

// RangeProof returns what proves the leaves [begin, end) in the tree of
// size size: the compact ranges [0, begin) and [end, size) (their hashes in
// compact.RangeNodes order). A verifier rebuilds the root from them and
// the leaves.
func RangeProof(ctx context.Context, db DBTX, begin, end, size uint64) (left, right [][]byte, err error) {
	if begin >= end || end > size {
		return nil, nil, fmt.Errorf("ledger: range proof: [%d, %d) is not a non-empty range of a tree of size %d", begin, end, size)
	}
	if left, err = ReadNodes(ctx, db, compact.RangeNodes(0, begin, nil)); err != nil {
		return nil, nil, err
	}
	if right, err = ReadNodes(ctx, db, compact.RangeNodes(end, size, nil)); err != nil {
		return nil, nil, err
	}
	return left, right, nil
}

// Checkpoint is a signed checkpoint of the log.
type Checkpoint struct {
	Size         uint64
	Root         []byte
	Origin       string
	Note         []byte // the signed note: body, blank line, the log's signature line
	Cosignatures []Cosignature
	SignedAt     time.Time
	PublishedAt  *time.Time
}

// Cosignature is a witness's signature line of a checkpoint.
type Cosignature struct {
	KeyName   string
	KeyHash   uint32
	Signature string // base64 of the key hash and signature, as in the note's line
}

// FullNote is the checkpoint's note with the witnesses' cosignature lines
// after the log's: the checkpoint as C2SP tlog-cosignature passes it on.
func (c Checkpoint) FullNote() []byte {
	var b bytes.Buffer
	b.Write(c.Note)
	for _, s := range c.Cosignatures {
		fmt.Fprintf(&b, "— %s %s\n", s.KeyName, s.Signature)
	}
	return b.Bytes()
}

// Body is the checkpoint text the signatures cover (origin, size, root and
// extension lines), without the signature lines.
func (c Checkpoint) Body() []byte {
	if i := bytes.Index(c.Note, []byte("\n\n")); i >= 0 {
		return c.Note[:i+1]
	}
	return c.Note
}

// NewestCheckpoint returns the newest checkpoint, or the newest published
// one, with its cosignatures; ErrNoCheckpoint when there is none.
func NewestCheckpoint(ctx context.Context, db DBTX, published bool) (Checkpoint, error) {
	cs, err := readCheckpoints(ctx, db, queryNewestCheckpoint, published)
	if err != nil {
		return Checkpoint{}, err
	}
	if len(cs) == 0 {
		return Checkpoint{}, ErrNoCheckpoint
	}
	return cs[0], nil
}

// CheckpointAt returns the checkpoint of size size; ErrNoCheckpoint when
// there is none.
func CheckpointAt(ctx context.Context, db DBTX, size uint64) (Checkpoint, error) {
	cs, err := readCheckpoints(ctx, db, queryCheckpointAt, int64(size))
	if err != nil {
		return Checkpoint{}, err
	}
	if len(cs) == 0 {
		return Checkpoint{}, fmt.Errorf("%w of size %d", ErrNoCheckpoint, size)
	}
	return cs[0], nil
}

// Checkpoints returns the checkpoints with from <= size <= to, ascending,
// at most limit of them.
func Checkpoints(ctx context.Context, db DBTX, from, to uint64, limit int) ([]Checkpoint, error) {
	return readCheckpoints(ctx, db, queryCheckpointsBetween, int64(from), int64(min(to, 1<<62)), limit)
}

func readCheckpoints(ctx context.Context, db DBTX, query string, args ...any) ([]Checkpoint, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: read checkpoints: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Checkpoint, error) {
		var c Checkpoint
		var size int64
		var note string
		var names, sigs []string
		var hashes []int64
		if err := row.Scan(&size, &c.Root, &c.Origin, &note, &c.SignedAt, &c.PublishedAt, &names, &hashes, &sigs); err != nil {
			return c, err
		}
		c.Size, c.Note = uint64(size), []byte(note)
		for i := range names {
			c.Cosignatures = append(c.Cosignatures, Cosignature{KeyName: names[i], KeyHash: uint32(hashes[i]), Signature: sigs[i]})
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: read checkpoints: %w", err)
	}
	return cs, nil
}

// AddCosignature stores a witness's cosignature line of checkpoint size;
// it reports whether the line was new.
func AddCosignature(ctx context.Context, db DBTX, size uint64, s Cosignature) (bool, error) {
	var added bool
	if err := db.QueryRow(ctx, queryCosign, int64(size), s.KeyName, int64(s.KeyHash), s.Signature).Scan(&added); err != nil {
		return false, fmt.Errorf("ledger: cosign checkpoint %d: %w", size, err)
	}
	return added, nil
}

// UnsealedEvent is a row of ledger.events that the Merkle log will never
// seal: the sealer's cursor has passed it and it is no leaf
// (ReasonBehindSealer), or it claims a transaction id no transaction has
// had yet (ReasonFutureTransaction). Only a writer who bypasses the
// ledger's functions, a superuser, can make one; no reader presents it
// as part of the record.
type UnsealedEvent struct {
	TxID       uint64
	Position   int64
	Stream     string
	Version    int64
	Type       string
	RecordedAt time.Time
	Reason     string
}

// Reasons of an UnsealedEvent.
const (
	ReasonBehindSealer      = "behind_sealer"
	ReasonFutureTransaction = "future_transaction"
)

// UnsealedEvents lists up to limit unsealed events in delivery order.
func UnsealedEvents(ctx context.Context, db DBTX, limit int) ([]UnsealedEvent, error) {
	rows, err := db.Query(ctx, queryUnsealedEvents, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: unsealed events: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[UnsealedEvent])
	if err != nil {
		return nil, fmt.Errorf("ledger: unsealed events: %w", err)
	}
	return out, nil
}
