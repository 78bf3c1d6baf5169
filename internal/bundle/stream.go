package bundle

import "strings"

// stream is what the verifier remembers of a stream.
type stream struct {
	last int64    // the last version read
	req  *request // of a request stream, once its tool.requested is read
}

// event checks an event record: as a leaf, then in its stream, then in its
// request's lifecycle.
func (v *Verifier) event(e *Event, facts *eventFacts) *Fault {
	if f := v.leaf(e, facts); f != nil || v.pending != nil {
		return f
	}
	s, f := v.version(e)
	if f != nil || v.pending != nil {
		return f
	}
	if id, ok := strings.CutPrefix(e.Stream, requestPrefix); ok {
		if f := v.requestEvent(s, id, e, facts); f != nil {
			return f
		}
	}
	v.rep.Events++
	return nil
}

// version checks e's place in its stream: versions ascend, and without a
// gap from version 1 in a full bundle and in every request stream.
func (v *Verifier) version(e *Event) (*stream, *Fault) {
	s := v.streams[e.Stream]
	if s == nil {
		s = &stream{}
		// The stream may have begun before the archive's leaves, or in
		// an archived range before this leaf (VerifyLive).
		if v.scope.Leaves != nil || len(v.archived) > 0 && v.archived[0].Begin < e.Leaf {
			s.last = e.Version - 1
		}
		v.streams[e.Stream] = s
	}
	gapless := v.scope.Full || strings.HasPrefix(e.Stream, requestPrefix)
	switch {
	case e.Version <= s.last:
		return s, fault(Reordered, "%s version %d comes after version %d", e.Stream, e.Version, s.last).atEvent(e)
	case gapless && e.Version > s.last+1:
		return s, v.missingVersion(e, s.last+1)
	}
	s.last = e.Version
	return s, nil
}

// missingVersion holds "version want of e's stream is absent" until the
// bundle shows whether it comes later (Reordered).
func (v *Verifier) missingVersion(e *Event, want int64) *Fault {
	f := fault(MissingEvent, "%s version %d is absent: leaf %d holds version %d", e.Stream, want, e.Leaf, e.Version).atEvent(e)
	f.Version = want
	name := e.Stream
	return v.hold(f, func(later *Event) *Fault {
		if later.Stream != name || later.Version != want {
			return nil
		}
		g := fault(Reordered, "%s version %d appears after version %d, at leaf %d", name, want, e.Version, later.Leaf)
		g.Leaf, g.Stream, g.Version = f.Leaf, f.Stream, f.Version
		return g
	})
}
