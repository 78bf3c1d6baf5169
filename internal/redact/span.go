package redact

import (
	"bytes"
	"sort"
)

// A span is a byte range to replace.
type span struct {
	start, end int  // replaced bytes; start == end marks a pending match (see open)
	drop       bool // replace with nothing (URL userinfo) instead of Marker
	ctx        int  // where the text that identified the range starts (a key, "Bearer", a URL)
	open       bool // the range reaches the end of the input and may continue after it
}

// merge sorts spans and joins overlapping ones; a joined span drops only if
// all its parts drop. Zero-width spans are left out.
func merge(spans []span) []span {
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := spans[:0:0]
	for _, s := range spans {
		if s.start >= s.end {
			continue
		}
		if n := len(out); n > 0 && joins(out[n-1], s) {
			last := &out[n-1]
			last.end = max(last.end, s.end)
			last.drop = last.drop && s.drop
			last.ctx = min(last.ctx, s.ctx)
			last.open = last.open || s.open
			continue
		}
		out = append(out, s)
	}
	return out
}

// joins reports whether b (starting at or after a) overlaps a, or touches
// it with both replaced by Marker (two markers in a row say nothing more).
func joins(a, b span) bool {
	return b.start < a.end || b.start == a.end && !a.drop && !b.drop
}

// apply returns p with merged spans replaced, and whether any was dropped.
func apply(p []byte, spans []span) ([]byte, bool) {
	spans = merge(spans)
	if len(spans) == 0 {
		return bytes.Clone(p), false
	}
	var b bytes.Buffer
	b.Grow(len(p))
	prev, dropped := 0, false
	for _, s := range spans {
		b.Write(p[prev:s.start])
		if s.drop {
			dropped = true
		} else {
			b.WriteString(Marker)
		}
		prev = s.end
	}
	b.Write(p[prev:])
	return b.Bytes(), dropped
}
