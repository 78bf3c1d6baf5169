package audit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cursor is a row's place in the audit trail's order (recorded_at,
// position, kind): Filter.After continues after it. Its text (String) is
// opaque to readers and safe in a URL.
type Cursor struct {
	RecordedAt time.Time
	Position   int64
	Kind       string // decision or outcome
}

// Cursor is r's place in the trail.
func (r Row) Cursor() Cursor {
	return Cursor{RecordedAt: r.RecordedAt, Position: r.Position, Kind: r.Kind}
}

// String is c as text: microseconds since the epoch (recorded_at's
// precision), position and kind, dot-separated.
func (c Cursor) String() string {
	return fmt.Sprintf("%d.%d.%s", c.RecordedAt.UnixMicro(), c.Position, c.Kind)
}

var errBadCursor = errors.New("not an audit trail cursor")

// ParseCursor reads a Cursor's String.
func ParseCursor(s string) (Cursor, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Cursor{}, fmt.Errorf("%q: %w", s, errBadCursor)
	}
	us, err1 := strconv.ParseInt(parts[0], 10, 64)
	pos, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || pos < 0 || parts[2] != "decision" && parts[2] != "outcome" {
		return Cursor{}, fmt.Errorf("%q: %w", s, errBadCursor)
	}
	return Cursor{RecordedAt: time.UnixMicro(us).UTC(), Position: pos, Kind: parts[2]}, nil
}
