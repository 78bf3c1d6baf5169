package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
)

// Partition is a partition of ledger.events (ledger.event_partitions): a
// range of transaction ids, and its first and last events in delivery
// order (none when empty).
type Partition struct {
	Name       string
	From, To   *string // xid8 as text; nil: unbounded
	Default    bool
	FirstTx    *string
	FirstPos   *int64
	LastTx     *string
	LastPos    *int64
	Archivable string // why it cannot be archived now; "" when it can (Partitions only)
}

// Partitions lists the partitions of ledger.events, oldest range first,
// the default partition last. With admin, each says whether it can be
// archived now (ledger.events_archive_plan's refusal, if any).
func Partitions(ctx context.Context, db ledger.DBTX, admin bool) ([]Partition, error) {
	rows, err := db.Query(ctx, queryPartitions)
	if err != nil {
		return nil, fmt.Errorf("export: partitions: %w", err)
	}
	var out []Partition
	var p Partition
	_, err = pgx.ForEachRow(rows, []any{&p.Name, &p.From, &p.To, &p.Default, &p.FirstTx, &p.FirstPos, &p.LastTx, &p.LastPos}, func() error {
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: partitions: %w", err)
	}
	if !admin {
		return out, nil
	}
	for i := range out {
		if _, err := PlanArchive(ctx, db, out[i].Name); err != nil {
			out[i].Archivable = err.Error()
		}
	}
	return out, nil
}

// ArchivePlan is a closed partition of ledger.events and the leaves it
// holds (ledger.events_archive_plan).
type ArchivePlan struct {
	Partition                   string
	From                        *string // xid8 as text; nil: from the first transaction
	To                          string
	Events                      int64
	FirstPosition, LastPosition int64
	FirstLeaf, LastLeaf         uint64
}

// Leaves is the plan's leaves [FirstLeaf, LastLeaf+1).
func (a ArchivePlan) Leaves() bundle.LeafRange {
	return bundle.LeafRange{Begin: a.FirstLeaf, End: a.LastLeaf + 1}
}

// PlanArchive checks that partition is closed and says which leaves it
// holds; ledger.events_archive_plan's error says why it is not closed.
// It runs in a transaction of its own when db is a pool, and may run in
// a transaction that takes an xid only after it: a running transaction
// with an id below the partition's end keeps it open.
func PlanArchive(ctx context.Context, db ledger.DBTX, partition string) (ArchivePlan, error) {
	a := ArchivePlan{Partition: partition}
	var first, last, firstPos, lastPos *int64
	err := db.QueryRow(ctx, queryArchivePlan, partition).Scan(&a.From, &a.To, &first, &last, &firstPos, &lastPos, &a.Events)
	if err != nil {
		return a, fmt.Errorf("archive: %w", err)
	}
	if a.Events > 0 {
		a.FirstLeaf, a.LastLeaf, a.FirstPosition, a.LastPosition = uint64(*first), uint64(*last), *firstPos, *lastPos
	}
	return a, nil
}

// ArchiveBundle writes the bundle of a's leaves (scope Leaves), proved
// against the newest published checkpoint, which must cover them, with
// every checkpoint up to it (as a full bundle has).
func ArchiveBundle(ctx context.Context, db ledger.DBTX, a ArchivePlan, now time.Time, w *bundle.Writer) (Summary, error) {
	span := a.Leaves()
	sum := Summary{Scope: bundle.Scope{Leaves: &span}}
	if a.Events == 0 {
		return sum, fmt.Errorf("archive: %s holds no event: there is nothing to export", a.Partition)
	}
	cp, err := ledger.NewestCheckpoint(ctx, db, true)
	if errors.Is(err, ledger.ErrNoCheckpoint) {
		return sum, (&chooser{db: db, published: true}).noCheckpoint(ctx)
	}
	if err != nil {
		return sum, fmt.Errorf("archive: %w", err)
	}
	if cp.Size < span.End {
		return sum, fmt.Errorf("archive: %w: the newest published checkpoint (%d) does not cover leaf %d yet; try again once the next is published",
			ErrNotSealed, cp.Size, span.End-1)
	}
	sum.Choice.Checkpoint, sum.Choice.Newest = cp, cp.Size
	p := &plan{newest: cp, span: &span, header: bundle.Header{
		Origin: cp.Origin, CreatedAt: now.UTC(), Scope: sum.Scope,
		Keys: bundle.KeyIDs{Log: logFingerprint(cp), Witnesses: witnessFingerprints(cp)},
	}}
	if p.header.Keys.Attestation, err = attestationKeys(ctx, db, cp.Size); err != nil {
		return sum, err
	}
	if err := writeAll(ctx, db, p, w); err != nil {
		return sum, err
	}
	sum.Events, sum.Requests, sum.Checkpoints, sum.Ranges = p.events, p.requests, p.written, p.ranges
	return sum, nil
}

// RangeHashes reads an archive bundle (after it verified) and returns the
// compact range of its events' leaf hashes: compact.RangeNodes(span),
// what ledger.event_archives keeps and verify --db checks the archived
// leaves with.
func RangeHashes(r io.Reader, span bundle.LeafRange) ([][]byte, error) {
	cr := (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewEmptyRange(span.Begin)
	err := bundle.ReadRecords(r, func(rec bundle.Record) error {
		e, ok := rec.(*bundle.Event)
		if !ok {
			return nil
		}
		if e.Leaf != cr.End() {
			return fmt.Errorf("archive: the bundle's leaf %d follows leaf %d", e.Leaf, cr.End())
		}
		return cr.Append(slices.Clone(e.LeafHash[:]), nil)
	})
	if err != nil {
		return nil, err
	}
	if cr.End() != span.End {
		return nil, fmt.Errorf("archive: the bundle holds leaves [%d, %d), not [%d, %d)", span.Begin, cr.End(), span.Begin, span.End)
	}
	return cr.Hashes(), nil
}

// Archive is a row of ledger.event_archives.
type Archive struct {
	ID                          int64
	Partition                   string
	Events                      int64
	FirstLeaf, LastLeaf         *int64
	FirstPosition, LastPosition *int64
	CheckpointSize              *int64
	BundleSHA256                *string
	ArchivedAt                  time.Time
	ArchivedBy                  string
}

// Detach records plan's archive (the checkpoint its bundle was proved
// against, the compact range of its leaves, the bundle's SHA-256) and
// detaches the partition, which ledger.events_archive_detach checks is
// still closed and whose range hashes it checks are the tree's. An empty
// partition is detached with no bundle (size 0, no hashes, no digest).
func Detach(ctx context.Context, db ledger.DBTX, plan ArchivePlan, size uint64, hashes [][]byte, sha256 string) (Archive, error) {
	var a Archive
	var sizeArg any
	var shaArg *string
	if plan.Events > 0 {
		sizeArg, shaArg = int64(size), &sha256
	} else {
		hashes = nil
	}
	err := db.QueryRow(ctx, queryArchiveDetach, plan.Partition, sizeArg, hashes, shaArg).Scan(&a.ID, &a.Partition, &a.Events,
		&a.FirstLeaf, &a.LastLeaf, &a.FirstPosition, &a.LastPosition, &a.CheckpointSize, &a.BundleSHA256, &a.ArchivedAt, &a.ArchivedBy)
	if err != nil {
		return a, fmt.Errorf("archive: detach %s: %w", plan.Partition, err)
	}
	return a, nil
}

// archivedRanges reads the archived ranges of leaves, ascending, for the
// verifier.
func archivedRanges(ctx context.Context, db ledger.DBTX) ([]bundle.Archived, error) {
	rows, err := db.Query(ctx, queryArchivedRanges)
	if err != nil {
		return nil, fmt.Errorf("export: archived ranges: %w", err)
	}
	var out []bundle.Archived
	var first, last int64
	var hashes [][]byte
	_, err = pgx.ForEachRow(rows, []any{&first, &last, &hashes}, func() error {
		out = append(out, bundle.Archived{Begin: uint64(first), End: uint64(last) + 1, Hashes: hashes})
		hashes = nil
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: archived ranges: %w", err)
	}
	return out, nil
}

// Archives lists ledger.event_archives, oldest first.
func Archives(ctx context.Context, db ledger.DBTX) ([]Archive, error) {
	rows, err := db.Query(ctx, queryArchives)
	if err != nil {
		return nil, fmt.Errorf("export: archives: %w", err)
	}
	var out []Archive
	var a Archive
	_, err = pgx.ForEachRow(rows, []any{&a.ID, &a.Partition, &a.Events, &a.FirstLeaf, &a.LastLeaf, &a.FirstPosition, &a.LastPosition,
		&a.CheckpointSize, &a.BundleSHA256, &a.ArchivedAt, &a.ArchivedBy}, func() error {
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: archives: %w", err)
	}
	return out, nil
}
