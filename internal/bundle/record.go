package bundle

import (
	"time"

	"github.com/execledger/execledger/ledger"
)

// The format a bundle's header names. A reader refuses any other format
// name and any other major version.
const (
	FormatName    = "execledger-bundle"
	FormatVersion = 1
)

// Record kinds: the "kind" member of every line.
const (
	KindHeader      = "header"
	KindCheckpoint  = "checkpoint"
	KindConsistency = "consistency"
	KindRange       = "range"
	KindEvent       = "event"
	KindEnd         = "end"
)

// Record is one line of a bundle: a *Header, *Checkpoint, *Consistency,
// *Range, *Event or *End.
type Record interface {
	Kind() string
}

// Header is a bundle's first record.
type Header struct {
	Format    string    `json:"format"`  // FormatName
	Version   int       `json:"version"` // FormatVersion
	Origin    string    `json:"origin"`  // the log's origin: the name of its note key
	CreatedAt time.Time `json:"created_at"`
	Scope     Scope     `json:"scope"`
	Keys      KeyIDs    `json:"keys"`
}

// Scope says which events a bundle holds: the whole log (Full) or a
// selection. The verifier checks a full bundle for completeness; of a
// partial one it checks that each request stream present is whole from its
// first event, and that a named Request is present.
type Scope struct {
	Full      bool       `json:"full"`
	Request   string     `json:"request,omitempty"`   // a request id (UUID)
	Principal string     `json:"principal,omitempty"` // a principal's requests
	Run       string     `json:"run,omitempty"`       // with Principal: that principal's requests of one run
	Since     *time.Time `json:"since,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	// Leaves: an archive bundle (execledger archive) holds exactly the
	// leaves [Begin, End) of a detached partition, every one; streams may
	// begin before Begin and go on after End.
	Leaves *LeafRange `json:"leaves,omitempty"`
}

// LeafRange is the leaves [Begin, End).
type LeafRange struct {
	Begin uint64 `json:"begin"`
	End   uint64 `json:"end"`
}

// Archived is a range of leaves [Begin, End) whose events were archived
// and detached from the database (ledger.event_archives): Hashes are the
// compact range of those leaves (compact.RangeNodes(Begin, End)) as the
// archive recorded them from the bundle that verified. VerifyLive checks
// them against the tree in their events' place.
type Archived struct {
	Begin, End uint64
	Hashes     [][]byte
}

// KeyIDs are the fingerprints of the keys that signed what a bundle holds.
// They are informative: a verifier trusts only the keys it is given.
type KeyIDs struct {
	Log         string   `json:"log"`         // "<name>+<8 hex key hash>" (Fingerprint)
	Attestation []string `json:"attestation"` // attest.PublicKeyID of each key seen
	Witnesses   []string `json:"witnesses"`   // Fingerprint of each witness key
}

// Checkpoint is a signed checkpoint of the log (C2SP tlog-checkpoint) with
// its witnesses' cosignatures (C2SP tlog-cosignature).
type Checkpoint struct {
	Size uint64
	Root []byte // SHA-256, 32 bytes
	Note string // the signed note: body, blank line, signature lines
}

// Consistency is an RFC 6962 consistency proof between the checkpoints of
// sizes From and To.
type Consistency struct {
	From, To uint64
	Hashes   [][]byte
}

// Range proves the leaves [Begin, End) against the checkpoint of size Size
// (the bundle's newest): Left are the hashes of compact.RangeNodes(0,
// Begin), Right those of compact.RangeNodes(End, Size). The End-Begin events
// it proves follow it.
type Range struct {
	Begin, End, Size uint64
	Left, Right      [][]byte
}

// Event is one event of the ledger and the leaf the log sealed it as.
type Event struct {
	Leaf       uint64    // its index in the Merkle log
	Position   int64     // ledger.events.position (informative)
	Stream     string    // e.g. "request:0193…"
	Version    int64     // 1-based within the stream
	Type       string    // e.g. "tool.requested"
	Payload    []byte    // exact JSON text, as hashed (a JSON string in the bundle)
	Metadata   []byte    // exact JSON text, as hashed (a JSON string in the bundle)
	RecordedAt time.Time // microsecond precision
	Hash       [32]byte  // the event hash as stored (ledger.EventHash)
	LeafHash   [32]byte  // the leaf hash the log sealed
}

// End is a bundle's last record; a bundle without it was cut short.
type End struct {
	Events      int64
	Checkpoints int64
}

// Kind returns KindHeader.
func (*Header) Kind() string { return KindHeader }

// Kind returns KindCheckpoint.
func (*Checkpoint) Kind() string { return KindCheckpoint }

// Kind returns KindConsistency.
func (*Consistency) Kind() string { return KindConsistency }

// Kind returns KindRange.
func (*Range) Kind() string { return KindRange }

// Kind returns KindEvent.
func (*Event) Kind() string { return KindEvent }

// Kind returns KindEnd.
func (*End) Kind() string { return KindEnd }

// EventOf is the record of e, sealed at leaf with leaf hash leafHash (as
// the log stores it: the exporter must not recompute it from e). It shares
// e's payload and metadata.
func EventOf(leaf uint64, e ledger.Event, leafHash [32]byte) Event {
	return Event{
		Leaf: leaf, Position: e.Position, Stream: e.Stream, Version: e.Version, Type: e.Type,
		Payload: e.Payload, Metadata: e.Metadata, RecordedAt: e.RecordedAt,
		Hash: e.Hash, LeafHash: leafHash,
	}
}

// encoding appends the event's canonical encoding (ledger.AppendEncoding)
// to dst.
func (e *Event) encoding(dst []byte) []byte {
	return ledger.AppendEncoding(dst, e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt)
}
