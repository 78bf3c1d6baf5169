package bundle

import (
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// phase is where in a bundle the verifier is.
type phase int

const (
	phaseHeader      phase = iota // before the header
	phaseCheckpoints              // checkpoints and consistency proofs
	phaseEvents                   // ranges and their events
	phaseEnded                    // after the end record
)

// Verifier checks a bundle record by record, in the order docs/bundle.md
// gives, and stops at the first fault. Feed it every record, then call
// Report. A Verifier is not safe for concurrent use.
type Verifier struct {
	keys   Keys
	origin string
	notes  note.Verifiers
	prep   preparer

	phase  phase
	record int64 // records fed
	scope  Scope

	checkpoints []checkpoint // verified, ascending size
	covered     bool         // a consistency proof joins the last two checkpoints

	open     *openRange // the range whose events are being read
	nextLeaf uint64     // the end of the last range

	// archived ranges (VerifyLive), ascending; prefix is the compact
	// range [0, nextLeaf) the ranges read so far lead to.
	archived []Archived
	prefix   *compact.Range
	sealed   []sealedLeaf

	streams  map[string]*stream
	requests []*request // in the order they began

	rep     Report
	fault   *Fault
	pending *pending
	final   bool // Report has settled the verdict
}

// pending is a fault found but not yet classified: a later record may show
// that what looks absent or altered was moved (Reordered). Records after it
// are only matched against it.
type pending struct {
	fault *Fault
	match func(*Event) *Fault // the fault that e reveals, or nil
}

// NewVerifier returns a Verifier trusting keys.
func NewVerifier(keys Keys) (*Verifier, error) {
	if err := keys.validate(); err != nil {
		return nil, err
	}
	return &Verifier{
		keys:    keys,
		origin:  keys.Log.Name(),
		notes:   note.VerifierList(append([]note.Verifier{keys.Log}, keys.Witnesses...)...),
		prep:    preparer{keys: keys},
		streams: make(map[string]*stream),
		rep:     Report{Origin: keys.Log.Name()},
	}, nil
}

// Feed checks the next record. It returns false once the verdict is a
// fault that no later record can change; the caller may stop feeding then.
func (v *Verifier) Feed(r Record) bool {
	return v.feed(v.prep.record(r))
}

func (v *Verifier) feed(p prepared) bool {
	if v.fault != nil || v.final {
		return false
	}
	v.record++
	if v.pending != nil {
		v.resolve(p)
	} else if f := v.check(p); f != nil {
		v.fail(f)
	}
	return v.fault == nil
}

// Report returns the verdict on the records fed so far, taken as the
// whole bundle: a bundle that has not ended was cut short. No record can
// be fed after it.
func (v *Verifier) Report() Report {
	if !v.final {
		v.final = true
		if v.pending != nil {
			v.fault, v.pending = v.pending.fault, nil
		}
		if v.fault == nil && v.phase != phaseEnded {
			v.record++
			v.fail(fault(Malformed, "the bundle ends without an end record: it was cut short"))
		}
	}
	rep := v.rep
	rep.Fault, rep.OK = v.fault, v.fault == nil
	if len(v.checkpoints) > 0 {
		newest := v.checkpoints[len(v.checkpoints)-1]
		rep.NewestSize, rep.NewestRoot = newest.size, newest.root
	}
	return rep
}

func (v *Verifier) fail(f *Fault) {
	f.Record = v.record
	v.fault = f
}

// hold makes f pending: reported unless a later event that match
// recognises shows the bundle reordered instead.
func (v *Verifier) hold(f *Fault, match func(*Event) *Fault) *Fault {
	f.Record = v.record
	v.pending = &pending{fault: f, match: match}
	return nil
}

// resolve matches a record read after a pending fault against it. A line
// that is not a record, or the end, settles it as it is.
func (v *Verifier) resolve(p prepared) {
	var found *Fault
	switch r := p.rec.(type) {
	case *Event:
		if found = v.pending.match(r); found == nil {
			return
		}
		found.Record = v.pending.fault.Record
	case *End:
	default:
		if p.fault == nil {
			return
		}
	}
	if found == nil {
		found = v.pending.fault
	}
	v.fault, v.pending = found, nil
}

func (v *Verifier) check(p prepared) *Fault {
	if p.fault != nil {
		return p.fault
	}
	if !known(p.rec) {
		return fault(Malformed, "%T is not a bundle record", p.rec)
	}
	if v.phase == phaseEnded {
		return fault(Malformed, "a %s record after the end record", p.rec.Kind())
	}
	if _, ok := p.rec.(*Header); !ok && v.phase == phaseHeader {
		return fault(Malformed, "the bundle does not begin with a header")
	}
	switch r := p.rec.(type) {
	case *Header:
		return v.header(r)
	case *Checkpoint:
		return v.checkpoint(r)
	case *Consistency:
		return v.consistency(r)
	case *Range:
		if f := v.beginEvents(); f != nil {
			return f
		}
		return v.rangeProof(r)
	case *Event:
		if f := v.beginEvents(); f != nil {
			return f
		}
		return v.event(r, &p.ev)
	case *End:
		if f := v.beginEvents(); f != nil {
			return f
		}
		return v.end(r)
	}
	return nil
}

// known reports whether r is a record of this package, not nil.
func known(r Record) bool {
	switch r := r.(type) {
	case *Header:
		return r != nil
	case *Checkpoint:
		return r != nil
	case *Consistency:
		return r != nil
	case *Range:
		return r != nil
	case *Event:
		return r != nil
	case *End:
		return r != nil
	}
	return false
}

func (v *Verifier) header(h *Header) *Fault {
	switch {
	case v.phase != phaseHeader:
		return fault(Malformed, "a second header")
	case h.Format != FormatName:
		return fault(Malformed, "format %q is not %q", h.Format, FormatName)
	case h.Version != FormatVersion:
		return fault(Malformed, "%s version %d: this verifier reads version %d", FormatName, h.Version, FormatVersion)
	case h.Origin != v.origin:
		return fault(UnknownKey, "the bundle is of log %q; the log key given is %s, of log %q", h.Origin, Fingerprint(v.keys.Log), v.origin)
	}
	v.scope = h.Scope
	v.rep.Scope = &v.scope
	if l := h.Scope.Leaves; l != nil {
		if h.Scope.Full || l.Begin >= l.End {
			return fault(Malformed, "the scope's leaves [%d, %d) are empty, or the scope is also full", l.Begin, l.End)
		}
		v.nextLeaf = l.Begin
	}
	if len(v.archived) > 0 {
		v.prefix = rangeFactory.NewEmptyRange(0)
	}
	v.phase = phaseCheckpoints
	return nil
}

// end checks what only the whole bundle shows: every leaf and every
// attestation present, and the counts.
func (v *Verifier) end(e *End) *Fault {
	v.phase = phaseEnded
	newest := v.newest()
	if o := v.open; o != nil && o.next < o.end {
		return fault(MissingEvent, "leaf %d is absent: the bundle ends %d events into range [%d, %d)", o.next, o.next-o.begin, o.begin, o.end).
			atLeaf(o.next)
	}
	if v.scope.Full && v.nextLeaf < newest.size {
		if f, ok := v.archivedTail(newest); ok {
			if f != nil {
				return f
			}
			v.nextLeaf = newest.size
		}
	}
	if l := v.scope.Leaves; l != nil && v.nextLeaf < l.End {
		return fault(MissingEvent, "leaves [%d, %d) of the archive's [%d, %d) are absent", v.nextLeaf, l.End, l.Begin, l.End).atLeaf(v.nextLeaf)
	}
	if v.scope.Full && v.nextLeaf < newest.size {
		return fault(MissingEvent, "leaves [%d, %d) of checkpoint %d are absent from a full bundle", v.nextLeaf, newest.size, newest.size).
			atLeaf(v.nextLeaf).atCheckpoint(newest.size)
	}
	if id := v.scope.Request; id != "" && v.streams[requestPrefix+id] == nil {
		f := fault(MissingEvent, "the bundle is of request %s, whose stream it does not hold", id)
		f.Stream = requestPrefix + id
		return f
	}
	// An archive's requests may be attested after its last leaf.
	if f := v.unattested(); f != nil && v.scope.Leaves == nil {
		return f
	}
	if e.Events != v.rep.Events || e.Checkpoints != v.rep.Checkpoints {
		return fault(Malformed, "the end record counts %d events and %d checkpoints, the bundle holds %d and %d",
			e.Events, e.Checkpoints, v.rep.Events, v.rep.Checkpoints)
	}
	return nil
}

// unattested reports the first final outcome (by leaf) that no attestation
// follows.
func (v *Verifier) unattested() *Fault {
	var first *request
	for _, r := range v.requests {
		if r.outcome != "" && !r.attested && (first == nil || r.outcomeLeaf < first.outcomeLeaf) {
			first = r
		}
	}
	if first == nil {
		return nil
	}
	f := fault(MissingAttestation, "request %s ended (%s at leaf %d) and the bundle holds no attestation of it",
		first.id, first.outcome, first.outcomeLeaf).atLeaf(first.outcomeLeaf)
	f.Stream, f.Version = requestPrefix+first.id, first.outcomeVersion
	return f
}
