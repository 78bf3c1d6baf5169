package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"time"
)

// Event is one stored event, as read back from the log.
type Event struct {
	Position   int64     // global position; unique, but commits out of order
	TxID       uint64    // the writing transaction; (TxID, Position) is the delivery order
	Stream     string    // e.g. "request:0193…"
	Version    int64     // 1-based, gapless within the stream
	Type       string    // e.g. "tool.requested"
	Payload    []byte    // exact JSON bytes, as hashed
	Metadata   []byte    // exact JSON bytes, as hashed
	RecordedAt time.Time // microsecond precision
	Hash       [32]byte  // EventHash of the fields above, computed by the database
}

// Cursor is a place in the gapless order ReadAll delivers: the events after
// it are those with a greater (TxID, Position).
type Cursor struct {
	TxID     uint64
	Position int64
}

// Cursor is the place just after e.
func (e Event) Cursor() Cursor { return Cursor{TxID: e.TxID, Position: e.Position} }

// NewEvent is an event to append. Payload must marshal to a JSON object.
type NewEvent struct {
	Type     string
	Payload  any // marshalled with encoding/json; a json.RawMessage or []byte is used as is
	Metadata Metadata
}

// Metadata says who caused an event and how it relates to others.
type Metadata struct {
	Actor         string `json:"actor,omitempty"`
	CausationID   string `json:"causation_id,omitempty"`
	CorrelationID string `json:"correlation_id,omitempty"`
	// TraceID and SpanID place the event in an OpenTelemetry trace (W3C
	// ids, lower-case hex): the span it was written in, or, for events
	// the database writes itself, the span whose traceparent the submitter
	// passed.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

const hashDomain = "execledger.event.v1"

// EventHash computes an event's hash the way the database does
// (ledger.event_hash): SHA-256 over a domain tag, then stream, version, type,
// payload, metadata and recorded_at, each variable-length field prefixed by
// its byte length as a big-endian uint64 and recorded_at as big-endian
// microseconds since the Unix epoch. Auditors use it to check exported
// events offline.
func EventHash(stream string, version int64, typ string, payload, metadata []byte, recordedAt time.Time) [32]byte {
	h := sha256.New()
	var n [8]byte
	h.Write([]byte(hashDomain))
	lp := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	lp([]byte(stream))
	binary.BigEndian.PutUint64(n[:], uint64(version))
	h.Write(n[:])
	lp([]byte(typ))
	lp(payload)
	lp(metadata)
	binary.BigEndian.PutUint64(n[:], uint64(recordedAt.UnixMicro()))
	h.Write(n[:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Verify reports whether e's stored hash matches its fields.
func (e Event) Verify() bool {
	return EventHash(e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt) == e.Hash
}

// Encode returns the payload and metadata as the JSON text the log stores,
// for callers of the ledger's SQL functions that take events as text.
func (ne NewEvent) Encode() (payload, metadata string, err error) {
	var p []byte
	switch v := ne.Payload.(type) {
	case json.RawMessage:
		p = v
	case []byte:
		p = v
	case nil:
		p = []byte("{}")
	default:
		if p, err = json.Marshal(v); err != nil {
			return "", "", &InvalidEventError{Type: ne.Type, Reason: "payload does not marshal: " + err.Error()}
		}
	}
	if !isJSONObject(p) {
		return "", "", &InvalidEventError{Type: ne.Type, Reason: "payload is not a JSON object"}
	}
	m, err := json.Marshal(ne.Metadata)
	if err != nil {
		return "", "", &InvalidEventError{Type: ne.Type, Reason: "metadata does not marshal: " + err.Error()}
	}
	return string(p), string(m), nil
}

func isJSONObject(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}
