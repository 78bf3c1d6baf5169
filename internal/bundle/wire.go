package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// line holds the members of every record kind, so that one decode reads
// any line. Numbers that a record needs are optional types so that an
// absent member is told apart from 0.
type line struct {
	Kind string `json:"kind"`

	Format    string     `json:"format"`
	Version   optInt     `json:"version"` // header: format version; event: stream version
	Origin    string     `json:"origin"`
	CreatedAt *time.Time `json:"created_at"`
	Scope     *Scope     `json:"scope"`
	Keys      *KeyIDs    `json:"keys"`

	Size optUint `json:"size"`
	Root []byte  `json:"root"`
	Note string  `json:"note"`

	From   optUint  `json:"from"`
	To     optUint  `json:"to"`
	Hashes [][]byte `json:"hashes"`

	Begin optUint  `json:"begin"`
	End   optUint  `json:"end"`
	Left  [][]byte `json:"left"`
	Right [][]byte `json:"right"`

	Leaf         optUint `json:"leaf"`
	Position     optInt  `json:"position"`
	Stream       string  `json:"stream"`
	Type         string  `json:"type"`
	Payload      text    `json:"payload"`
	Metadata     text    `json:"metadata"`
	RecordedAtUS optInt  `json:"recorded_at_us"`
	Hash         string  `json:"hash"`
	LeafHash     []byte  `json:"leaf_hash"`

	Events      optInt `json:"events"`
	Checkpoints optInt `json:"checkpoints"`
}

// ParseRecord decodes one line of a bundle (without its newline). It
// refuses a line that is not one JSON object, an unknown kind, a member of
// the wrong type, a missing member the kind needs, and hashes that are not
// 32 bytes in the expected encoding. Members it does not know are ignored.
func ParseRecord(b []byte) (Record, error) {
	var l line
	if parseEventLine(b, &l) {
		return l.event()
	}
	l = line{}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("not a bundle record: %w", err)
	}
	switch l.Kind {
	case KindEvent: // first: nearly every line is one
		return l.event()
	case KindHeader:
		return l.header()
	case KindCheckpoint:
		return l.checkpoint()
	case KindConsistency:
		return l.consistency()
	case KindRange:
		return l.rangeProof()
	case KindEnd:
		return l.end()
	case "":
		return nil, errors.New("record has no kind")
	}
	return nil, fmt.Errorf("unknown record kind %q", l.Kind)
}

func (l *line) header() (*Header, error) {
	if l.Format == "" || !l.Version.Set || l.Origin == "" || l.CreatedAt == nil || l.Scope == nil {
		return nil, errors.New("header needs format, version, origin, created_at and scope")
	}
	h := &Header{Format: l.Format, Version: int(l.Version.V), Origin: l.Origin, CreatedAt: *l.CreatedAt, Scope: *l.Scope}
	if l.Keys != nil {
		h.Keys = *l.Keys
	}
	return h, nil
}

func (l *line) checkpoint() (*Checkpoint, error) {
	if !l.Size.Set || l.Note == "" {
		return nil, errors.New("checkpoint needs size, root and note")
	}
	if len(l.Root) != sha256.Size {
		return nil, fmt.Errorf("checkpoint root has %d bytes, want %d", len(l.Root), sha256.Size)
	}
	return &Checkpoint{Size: l.Size.V, Root: l.Root, Note: l.Note}, nil
}

func (l *line) consistency() (*Consistency, error) {
	if !l.From.Set || !l.To.Set {
		return nil, errors.New("consistency needs from, to and hashes")
	}
	if err := checkHashes("hashes", l.Hashes); err != nil {
		return nil, err
	}
	return &Consistency{From: l.From.V, To: l.To.V, Hashes: l.Hashes}, nil
}

func (l *line) rangeProof() (*Range, error) {
	if !l.Begin.Set || !l.End.Set || !l.Size.Set {
		return nil, errors.New("range needs begin, end, size, left and right")
	}
	if err := checkHashes("left", l.Left); err != nil {
		return nil, err
	}
	if err := checkHashes("right", l.Right); err != nil {
		return nil, err
	}
	return &Range{Begin: l.Begin.V, End: l.End.V, Size: l.Size.V, Left: l.Left, Right: l.Right}, nil
}

func (l *line) event() (*Event, error) {
	if !l.Leaf.Set || !l.Version.Set || !l.RecordedAtUS.Set || l.Stream == "" || l.Type == "" || len(l.Payload) == 0 || len(l.Metadata) == 0 {
		return nil, errors.New("event needs leaf, stream, version, type, payload, metadata, recorded_at_us, hash and leaf_hash")
	}
	if l.Version.V < 1 {
		return nil, fmt.Errorf("event version %d: stream versions begin at 1", l.Version.V)
	}
	e := &Event{
		Leaf: l.Leaf.V, Position: l.Position.V, Stream: l.Stream, Version: l.Version.V, Type: l.Type,
		Payload: l.Payload, Metadata: l.Metadata, RecordedAt: time.UnixMicro(l.RecordedAtUS.V).UTC(),
	}
	if len(l.Hash) != 2*sha256.Size {
		return nil, fmt.Errorf("event hash is not %d hex digits", 2*sha256.Size)
	}
	if _, err := hex.Decode(e.Hash[:], []byte(l.Hash)); err != nil {
		return nil, fmt.Errorf("event hash: %w", err)
	}
	if len(l.LeafHash) != sha256.Size {
		return nil, fmt.Errorf("event leaf_hash has %d bytes, want %d", len(l.LeafHash), sha256.Size)
	}
	e.LeafHash = [32]byte(l.LeafHash)
	return e, nil
}

func (l *line) end() (*End, error) {
	if !l.Events.Set || !l.Checkpoints.Set {
		return nil, errors.New("end needs events and checkpoints")
	}
	return &End{Events: l.Events.V, Checkpoints: l.Checkpoints.V}, nil
}

func checkHashes(name string, hs [][]byte) error {
	for i, h := range hs {
		if len(h) != sha256.Size {
			return fmt.Errorf("%s[%d] has %d bytes, want %d", name, i, len(h), sha256.Size)
		}
	}
	return nil
}

// text is a JSON string read as bytes: the exact text it carries.
type text []byte

func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = text(s)
	return nil
}

// optUint is a JSON integer ≥ 0 that may be absent.
type optUint struct {
	V   uint64
	Set bool
}

func (o *optUint) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer ≥ 0", b)
	}
	*o = optUint{V: v, Set: true}
	return nil
}

// optInt is a JSON integer that may be absent.
type optInt struct {
	V   int64
	Set bool
}

func (o *optInt) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer", b)
	}
	*o = optInt{V: v, Set: true}
	return nil
}

// The lines a Writer writes: "kind" first, then the record's members.
type (
	headerLine struct {
		Kind string `json:"kind"`
		*Header
	}
	checkpointLine struct {
		Kind string `json:"kind"`
		Size uint64 `json:"size"`
		Root []byte `json:"root"`
		Note string `json:"note"`
	}
	consistencyLine struct {
		Kind   string   `json:"kind"`
		From   uint64   `json:"from"`
		To     uint64   `json:"to"`
		Hashes [][]byte `json:"hashes"`
	}
	rangeLine struct {
		Kind  string   `json:"kind"`
		Begin uint64   `json:"begin"`
		End   uint64   `json:"end"`
		Size  uint64   `json:"size"`
		Left  [][]byte `json:"left"`
		Right [][]byte `json:"right"`
	}
	eventLine struct {
		Kind         string `json:"kind"`
		Leaf         uint64 `json:"leaf"`
		Position     int64  `json:"position"`
		Stream       string `json:"stream"`
		Version      int64  `json:"version"`
		Type         string `json:"type"`
		Payload      string `json:"payload"`
		Metadata     string `json:"metadata"`
		RecordedAtUS int64  `json:"recorded_at_us"`
		Hash         string `json:"hash"`
		LeafHash     string `json:"leaf_hash"`
	}
	endLine struct {
		Kind        string `json:"kind"`
		Events      int64  `json:"events"`
		Checkpoints int64  `json:"checkpoints"`
	}
)

// wireOf returns the value whose JSON is r's line.
func wireOf(r Record) (any, error) {
	switch r := r.(type) {
	case *Header:
		h := *r
		h.Keys.Attestation, h.Keys.Witnesses = nonNil(h.Keys.Attestation), nonNil(h.Keys.Witnesses)
		return headerLine{KindHeader, &h}, nil
	case *Checkpoint:
		return checkpointLine{KindCheckpoint, r.Size, r.Root, r.Note}, nil
	case *Consistency:
		return consistencyLine{KindConsistency, r.From, r.To, nonNil(r.Hashes)}, nil
	case *Range:
		return rangeLine{KindRange, r.Begin, r.End, r.Size, nonNil(r.Left), nonNil(r.Right)}, nil
	case *Event:
		// encoding/json would replace invalid UTF-8, and the bytes would no
		// longer be the ones hashed.
		if !utf8.ValidString(r.Stream) || !utf8.ValidString(r.Type) || !utf8.Valid(r.Payload) || !utf8.Valid(r.Metadata) {
			return nil, fmt.Errorf("event at leaf %d is not valid UTF-8", r.Leaf)
		}
		return eventLine{
			Kind: KindEvent, Leaf: r.Leaf, Position: r.Position, Stream: r.Stream, Version: r.Version, Type: r.Type,
			Payload: string(r.Payload), Metadata: string(r.Metadata), RecordedAtUS: r.RecordedAt.UnixMicro(),
			Hash: hex.EncodeToString(r.Hash[:]), LeafHash: base64.StdEncoding.EncodeToString(r.LeafHash[:]),
		}, nil
	case *End:
		return endLine{KindEnd, r.Events, r.Checkpoints}, nil
	}
	return nil, fmt.Errorf("bundle: %T is not a record", r)
}

// appendRecord appends r's line, newline included, to buf.
func appendRecord(buf *bytes.Buffer, r Record) error {
	w, err := wireOf(r)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(w)
}

// nonNil makes an absent list marshal as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
