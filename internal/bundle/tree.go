package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"slices"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// rangeFactory builds RFC 6962 compact ranges.
var rangeFactory = &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// openRange is a range proof whose events are being read: tree is the
// compact range [0, next), right the proof's [end, size).
type openRange struct {
	begin, end, next uint64
	tree, right      *compact.Range
}

// sealedLeaf remembers the leaf hash an event record says the log sealed,
// to tell an event moved to another leaf (Reordered) from an altered one.
// The first 8 bytes of the hash are enough to classify a fault already
// found; they prove nothing on their own.
type sealedLeaf struct {
	leaf   uint64
	prefix uint64
}

func prefixOf(h [32]byte) uint64 { return binary.BigEndian.Uint64(h[:8]) }

// rangeProof starts a range: the leaves it claims must be within the
// newest checkpoint, after the previous range's (and, in a full bundle,
// right after them), and its compact ranges of the right sizes.
func (v *Verifier) rangeProof(r *Range) *Fault {
	if o := v.open; o != nil && o.next < o.end {
		return v.missingLeaf(o.next, "range [%d, %d) ends after %d of its events", o.begin, o.end, o.next-o.begin)
	}
	newest := v.newest()
	switch {
	case r.Begin >= r.End:
		return fault(InclusionFailed, "range [%d, %d) is empty", r.Begin, r.End).atLeaf(r.Begin)
	case r.End > newest.size:
		return fault(InclusionFailed, "range [%d, %d) claims leaf %d beyond checkpoint %d", r.Begin, r.End, r.End-1, newest.size).
			atLeaf(r.End - 1).atCheckpoint(newest.size)
	case r.Size != newest.size:
		return fault(InclusionFailed, "range [%d, %d) is proved against size %d, the newest checkpoint is %d", r.Begin, r.End, r.Size, newest.size).
			atLeaf(r.Begin).atCheckpoint(newest.size)
	case r.Begin < v.nextLeaf:
		return fault(Reordered, "range [%d, %d) comes after a range that ended at leaf %d", r.Begin, r.End, v.nextLeaf).atLeaf(r.Begin)
	case v.scope.Leaves != nil && r.End > v.scope.Leaves.End:
		return fault(InclusionFailed, "range [%d, %d) goes beyond the archive's leaves [%d, %d)", r.Begin, r.End, v.scope.Leaves.Begin, v.scope.Leaves.End).
			atLeaf(r.Begin)
	case (v.scope.Full || v.scope.Leaves != nil) && r.Begin > v.nextLeaf:
		if f, ok := v.archivedGap(r); ok {
			if f != nil {
				return f
			}
			break
		}
		return v.missingLeaf(v.nextLeaf, "the next range of a full bundle begins at leaf %d", r.Begin)
	}
	// Cloned: a compact range appends to its hashes in place.
	left, err := rangeFactory.NewRange(0, r.Begin, slices.Clone(r.Left))
	if err != nil {
		return fault(InclusionFailed, "range [%d, %d): left: %v", r.Begin, r.End, err).atLeaf(r.Begin)
	}
	right, err := rangeFactory.NewRange(r.End, r.Size, r.Right)
	if err != nil {
		return fault(InclusionFailed, "range [%d, %d): right: %v", r.Begin, r.End, err).atLeaf(r.Begin)
	}
	v.open = &openRange{begin: r.Begin, end: r.End, next: r.Begin, tree: left, right: right}
	v.nextLeaf = r.End
	return nil
}

// missingLeaf holds "leaf i is absent" until the bundle shows whether leaf
// i comes later (Reordered).
func (v *Verifier) missingLeaf(i uint64, format string, args ...any) *Fault {
	f := fault(MissingEvent, "leaf %d is absent: "+format, append([]any{i}, args...)...).atLeaf(i)
	return v.hold(f, func(e *Event) *Fault {
		if e.Leaf != i {
			return nil
		}
		return fault(Reordered, "leaf %d appears out of order, later in the bundle", i).atEvent(e)
	})
}

// leaf checks an event as a leaf of the open range: its place, its event
// hash, its leaf hash; the last event of the range checks the range's root.
func (v *Verifier) leaf(e *Event, facts *eventFacts) *Fault {
	o := v.open
	switch {
	case o == nil || o.next == o.end:
		return fault(InclusionFailed, "the event at leaf %d is not covered by a range proof", e.Leaf).atEvent(e)
	case e.Leaf < o.next:
		return fault(Reordered, "leaf %d appears after leaf %d", e.Leaf, o.next-1).atEvent(e)
	case e.Leaf > o.next:
		return v.missingLeaf(o.next, "the record after leaf %d is leaf %d", o.next-1, e.Leaf)
	case facts.encHash != e.Hash:
		return fault(HashMismatch, "the event's fields hash to %x, its record says %x", facts.encHash, e.Hash).atEvent(e)
	case facts.leafHash != e.LeafHash:
		return v.leafMismatch(e, facts.leafHash)
	}
	v.sealed = append(v.sealed, sealedLeaf{leaf: e.Leaf, prefix: prefixOf(e.LeafHash)})
	if err := o.tree.Append(e.LeafHash[:], nil); err != nil {
		return fault(InclusionFailed, "leaf %d: %v", e.Leaf, err).atEvent(e)
	}
	o.next++
	if o.next < o.end {
		return nil
	}
	return v.closeRange(o)
}

// leafMismatch classifies an event whose encoding is not the leaf the log
// sealed: if it is the leaf sealed at another leaf of the bundle, the
// event was moved (Reordered); else it was altered (HashMismatch).
func (v *Verifier) leafMismatch(e *Event, computed [32]byte) *Fault {
	p := prefixOf(computed)
	for _, s := range v.sealed {
		if s.prefix == p {
			return fault(Reordered, "leaf %d holds the event the log sealed at leaf %d", e.Leaf, s.leaf).atEvent(e)
		}
	}
	f := fault(HashMismatch, "the event's encoding has leaf hash %s, the log sealed %s",
		base64.StdEncoding.EncodeToString(computed[:]), base64.StdEncoding.EncodeToString(e.LeafHash[:])).atEvent(e)
	leaf := e.Leaf
	return v.hold(f, func(later *Event) *Fault {
		if later.LeafHash != computed {
			return nil
		}
		g := fault(Reordered, "leaf %d holds the event the log sealed at leaf %d", leaf, later.Leaf)
		g.Leaf, g.Stream, g.Version = f.Leaf, f.Stream, f.Version
		return g
	})
}

// closeRange checks that the range's leaves and proof lead to the newest
// checkpoint's root.
func (v *Verifier) closeRange(o *openRange) *Fault {
	newest := v.newest()
	if v.prefix != nil {
		v.prefix = cloneRange(o.tree)
	}
	var root []byte
	err := o.tree.AppendRange(o.right, nil)
	if err == nil {
		root, err = o.tree.GetRootHash(nil)
	}
	if err != nil || !bytes.Equal(root, newest.root) {
		return fault(InclusionFailed, "leaves [%d, %d) and their range proof do not lead to the root of checkpoint %d", o.begin, o.end, newest.size).
			atLeaf(o.begin).atCheckpoint(newest.size)
	}
	o.tree, o.right = nil, nil
	return nil
}

func cloneRange(r *compact.Range) *compact.Range {
	c, _ := rangeFactory.NewRange(r.Begin(), r.End(), slices.Clone(r.Hashes()))
	return c
}

// archivedGap checks a full scope's range that begins after the last one
// ended: ok when archived ranges tile the leaves between, and then a fault
// unless the ranges read so far and the archives' compact ranges are
// exactly the range's left proof.
func (v *Verifier) archivedGap(r *Range) (*Fault, bool) {
	if !v.scope.Full || v.prefix == nil || v.prefix.End() != v.nextLeaf {
		return nil, false
	}
	joined, ok := v.joinArchived(v.nextLeaf, r.Begin)
	if !ok {
		return nil, false
	}
	if joined == nil {
		return fault(InclusionFailed, "the archived leaves before leaf %d do not join the leaves before them (ledger.event_archives)", r.Begin).atLeaf(v.nextLeaf), true
	}
	if !slices.EqualFunc(joined.Hashes(), r.Left, bytes.Equal) {
		return fault(InclusionFailed, "the archived leaves [%d, %d) (ledger.event_archives) are not the tree's: range [%d, %d)'s left proof differs",
			v.nextLeaf, r.Begin, r.Begin, r.End).atLeaf(v.nextLeaf), true
	}
	return nil, true
}

// archivedTail reports whether archived ranges tile the leaves from the
// last range's end to the newest checkpoint, and a fault unless they lead,
// after the ranges read, to its root.
func (v *Verifier) archivedTail(newest checkpoint) (*Fault, bool) {
	if v.prefix == nil || v.prefix.End() != v.nextLeaf {
		return nil, false
	}
	joined, ok := v.joinArchived(v.nextLeaf, newest.size)
	if !ok {
		return nil, false
	}
	var root []byte
	var err error
	if joined != nil {
		root, err = joined.GetRootHash(nil)
	}
	if joined == nil || err != nil || !bytes.Equal(root, newest.root) {
		return fault(InclusionFailed, "the archived leaves [%d, %d) (ledger.event_archives) do not lead to the root of checkpoint %d",
			v.nextLeaf, newest.size, newest.size).atLeaf(v.nextLeaf).atCheckpoint(newest.size), true
	}
	return nil, true
}

// joinArchived joins the prefix with the archived ranges that tile
// [from, to): ok reports whether they tile it; the joined range is nil
// when an archive's hashes are not a compact range of its leaves.
func (v *Verifier) joinArchived(from, to uint64) (*compact.Range, bool) {
	var tiles []Archived
	at := from
	for _, a := range v.archived {
		if a.Begin == at && a.End <= to {
			tiles = append(tiles, a)
			at = a.End
		}
	}
	if at != to || len(tiles) == 0 {
		return nil, false
	}
	joined := cloneRange(v.prefix)
	for _, a := range tiles {
		cr, err := rangeFactory.NewRange(a.Begin, a.End, slices.Clone(a.Hashes))
		if err != nil || joined.AppendRange(cr, nil) != nil {
			return nil, true
		}
		v.rep.Archived += a.End - a.Begin
	}
	return joined, true
}
