package export

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
)

// chunkLeaves is how many leaves one query reads.
const chunkLeaves = 10000

// readLeaves runs queryLeafList and
// returns the leaves' events in leaf order, each with the leaf hash the
// log stores. A leaf whose event row is gone is left out: the leaves
// around it are then not consecutive, and the verifier reports the gap.
func readLeaves(ctx context.Context, db ledger.DBTX, query string, args ...any) ([]bundle.Event, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("export: read leaves: %w", err)
	}
	defer rows.Close()
	var out []bundle.Event
	for rows.Next() {
		var (
			leaf              int64
			leafHash, hash    []byte
			position, version *int64
			stream, typ       *string
			payload, metadata []byte
			recordedAt        *time.Time
		)
		if err := rows.Scan(&leaf, &leafHash, &position, &stream, &version, &typ, &payload, &metadata, &recordedAt, &hash); err != nil {
			return nil, fmt.Errorf("export: read leaves: %w", err)
		}
		if position == nil {
			continue
		}
		e := ledger.Event{Position: *position, Stream: *stream, Version: *version, Type: *typ,
			Payload: payload, Metadata: metadata, RecordedAt: *recordedAt}
		copy(e.Hash[:], hash)
		out = append(out, bundle.EventOf(uint64(leaf), e, [32]byte(leafHash)))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export: read leaves: %w", err)
	}
	return out, nil
}

// sealed is a leaf as log_leaves and log_nodes hold it: the key of its
// event and its leaf hash.
type sealed struct {
	index    uint64
	tx       string // xid8 as text
	position int64
	hash     []byte
}

// readLeafRange reads the leaves [begin, end) and their events, as
// readLeaves does, with two range scans rather than a lookup per leaf.
func readLeafRange(ctx context.Context, db ledger.DBTX, begin, end uint64) ([]bundle.Event, error) {
	rows, err := db.Query(ctx, queryLeafRange, int64(begin), int64(end))
	if err != nil {
		return nil, fmt.Errorf("export: read leaves: %w", err)
	}
	var leaves []sealed
	var l sealed
	var index int64
	_, err = pgx.ForEachRow(rows, []any{&index, &l.tx, &l.position, &l.hash}, func() error {
		l.index = uint64(index)
		leaves = append(leaves, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: read leaves: %w", err)
	}
	if len(leaves) == 0 {
		return nil, nil
	}
	at := make(map[eventKey]int, len(leaves))
	for i, l := range leaves {
		at[eventKey{l.tx, l.position}] = i
	}
	first, last := leaves[0], leaves[len(leaves)-1]
	rows, err = db.Query(ctx, queryEventRange, first.tx, first.position, last.tx, last.position)
	if err != nil {
		return nil, fmt.Errorf("export: read events: %w", err)
	}
	out := make([]bundle.Event, 0, len(leaves))
	var e ledger.Event
	var tx string
	var hash []byte
	_, err = pgx.ForEachRow(rows, []any{&tx, &e.Position, &e.Stream, &e.Version, &e.Type, &e.Payload, &e.Metadata, &e.RecordedAt, &hash},
		func() error {
			i, ok := at[eventKey{tx, e.Position}]
			if !ok { // not a leaf of the range: the verifier needs only the leaves
				return nil
			}
			copy(e.Hash[:], hash)
			out = append(out, bundle.EventOf(leaves[i].index, e, [32]byte(leaves[i].hash)))
			e.Payload, e.Metadata = nil, nil // scanned afresh: the record keeps them
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("export: read events: %w", err)
	}
	slices.SortFunc(out, func(a, b bundle.Event) int { return cmp.Compare(a.Leaf, b.Leaf) })
	return out, nil
}

// eventKey is an event's place in delivery order.
type eventKey struct {
	tx       string
	position int64
}

// run is a run of events at consecutive leaves [begin, end).
type run struct {
	begin, end uint64
	events     []bundle.Event
}

// runsOf splits events (ascending leaves) into runs of consecutive leaves.
func runsOf(events []bundle.Event) []run {
	var runs []run
	for i := 0; i < len(events); {
		j := i + 1
		for j < len(events) && events[j].Leaf == events[j-1].Leaf+1 {
			j++
		}
		runs = append(runs, run{begin: events[i].Leaf, end: events[j-1].Leaf + 1, events: events[i:j]})
		i = j
	}
	return runs
}

// nodeSet collects the log nodes several proofs need, each once, to read
// them in one query.
type nodeSet struct {
	ids   []compact.NodeID
	index map[compact.NodeID]int
	found [][]byte
}

func newNodeSet() *nodeSet { return &nodeSet{index: map[compact.NodeID]int{}} }

// add adds nodes and returns where their hashes will be.
func (s *nodeSet) add(nodes []compact.NodeID) []int {
	at := make([]int, len(nodes))
	for i, id := range nodes {
		j, ok := s.index[id]
		if !ok {
			j = len(s.ids)
			s.index[id] = j
			s.ids = append(s.ids, id)
		}
		at[i] = j
	}
	return at
}

func (s *nodeSet) read(ctx context.Context, db ledger.DBTX) error {
	var err error
	if s.found, err = ledger.ReadNodes(ctx, db, s.ids); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// hashes returns the hashes at at, once read.
func (s *nodeSet) hashes(at []int) [][]byte {
	h := make([][]byte, len(at))
	for i, j := range at {
		h[i] = s.found[j]
	}
	return h
}

// rangeProofs proves each run against the tree of size size
// (ledger.RangeProof, with one query for all of them).
func rangeProofs(ctx context.Context, db ledger.DBTX, runs []run, size uint64) ([]bundle.Range, error) {
	s := newNodeSet()
	left, right := make([][]int, len(runs)), make([][]int, len(runs))
	for i, r := range runs {
		if r.end > size {
			return nil, fmt.Errorf("export: leaves [%d, %d) are not in the tree of size %d", r.begin, r.end, size)
		}
		left[i] = s.add(compact.RangeNodes(0, r.begin, nil))
		right[i] = s.add(compact.RangeNodes(r.end, size, nil))
	}
	if err := s.read(ctx, db); err != nil {
		return nil, err
	}
	out := make([]bundle.Range, len(runs))
	for i, r := range runs {
		out[i] = bundle.Range{Begin: r.begin, End: r.end, Size: size, Left: s.hashes(left[i]), Right: s.hashes(right[i])}
	}
	return out, nil
}

// consistencyProofs proves that each tree of sizes (ascending) extends the
// one before it: proofs[i] is from sizes[i] to sizes[i+1].
func consistencyProofs(ctx context.Context, db ledger.DBTX, sizes []uint64) ([][][]byte, error) {
	if len(sizes) < 2 {
		return nil, nil
	}
	s := newNodeSet()
	nodes := make([]proof.Nodes, len(sizes)-1)
	at := make([][]int, len(sizes)-1)
	for i := range nodes {
		var err error
		if nodes[i], err = proof.Consistency(sizes[i], sizes[i+1]); err != nil {
			return nil, fmt.Errorf("export: consistency proof from %d to %d: %w", sizes[i], sizes[i+1], err)
		}
		at[i] = s.add(nodes[i].IDs)
	}
	if err := s.read(ctx, db); err != nil {
		return nil, err
	}
	proofs := make([][][]byte, len(nodes))
	for i, n := range nodes {
		p, err := n.Rehash(s.hashes(at[i]), rfc6962.DefaultHasher.HashChildren)
		if err != nil {
			return nil, fmt.Errorf("export: consistency proof from %d to %d: %w", sizes[i], sizes[i+1], err)
		}
		proofs[i] = p
	}
	return proofs, nil
}
