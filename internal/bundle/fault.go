package bundle

import (
	"fmt"
	"strings"
)

// Fault codes: stable, documented in docs/bundle.md. A verifier reports the
// first fault it finds.
const (
	// HashMismatch: an event's fields do not hash to its recorded hash, or
	// its encoding does not hash to the leaf hash the log sealed.
	HashMismatch = "hash_mismatch"
	// InclusionFailed: a range proof does not lead to the newest
	// checkpoint's root, or an event or range claims a leaf it does not
	// prove.
	InclusionFailed = "inclusion_failed"
	// InconsistentCheckpoints: checkpoints that are not append-only
	// extensions of each other, a missing consistency proof, or an
	// attestation naming a checkpoint the bundle does not hold.
	InconsistentCheckpoints = "inconsistent_checkpoints"
	// BadSignature: a signature by a trusted key that does not verify, a
	// checkpoint not matching its signed body, a required cosignature
	// missing.
	BadSignature = "bad_signature"
	// UnknownKey: signed only by keys the verifier was not given.
	UnknownKey = "unknown_key"
	// SubjectMismatch: an attestation or request event that does not
	// describe the request the ledger records.
	SubjectMismatch = "subject_mismatch"
	// MissingEvent: a leaf or a stream version absent from the bundle.
	MissingEvent = "missing_event"
	// Reordered: events in another order than the log sealed them or than
	// a request's lifecycle allows.
	Reordered = "reordered"
	// MissingAttestation: a request's final outcome without the
	// attestation that signs it.
	MissingAttestation = "missing_attestation"
	// UnsealedEvent (verify --db only): a row of ledger.events below the
	// sealed horizon that is no leaf of the Merkle log, or that claims a
	// transaction id no transaction has had: written behind the sealer.
	UnsealedEvent = "unsealed_event"
	// ReadModelDiffers (verify --db only): a read model row that is not
	// what the sealed log says: a final request whose state, error kind,
	// tier or output is not its sealed attestation's, or a table that
	// differs from its rebuild from the log.
	ReadModelDiffers = "read_model_differs"
	// Empty (execledger verify of a bundle): a bundle that verifies but
	// holds no event, so it proves nothing about its scope; most often an
	// export whose filters matched no request. Verify itself reports such
	// a bundle ok with Events 0.
	Empty = "empty"
	// Malformed: a line that is not a bundle record, a record out of
	// place, a bundle cut short.
	Malformed = "malformed"
)

// Fault is what is wrong with a bundle, and where: the "where" fields that
// apply are set.
type Fault struct {
	Code       string  `json:"code"`
	Record     int64   `json:"record"`               // the 1-based record (line) at which it was found
	Leaf       *uint64 `json:"leaf,omitempty"`       // the log leaf
	Stream     string  `json:"stream,omitempty"`     // the event's stream
	Version    int64   `json:"version,omitempty"`    // the stream version
	Checkpoint *uint64 `json:"checkpoint,omitempty"` // the checkpoint's size
	Message    string  `json:"message"`
}

// Error returns the code, where, and the message.
func (f *Fault) Error() string {
	var b strings.Builder
	b.WriteString(f.Code)
	if f.Leaf != nil {
		fmt.Fprintf(&b, " at leaf %d", *f.Leaf)
	}
	if f.Stream != "" {
		fmt.Fprintf(&b, " (%s", f.Stream)
		if f.Version != 0 {
			fmt.Fprintf(&b, " version %d", f.Version)
		}
		b.WriteString(")")
	}
	if f.Checkpoint != nil {
		fmt.Fprintf(&b, " checkpoint %d", *f.Checkpoint)
	}
	fmt.Fprintf(&b, " record %d: %s", f.Record, f.Message)
	return b.String()
}

// Report is a verification's verdict and what it covered.
type Report struct {
	OK           bool   `json:"ok"`
	Origin       string `json:"origin,omitempty"`
	Scope        *Scope `json:"scope,omitempty"`
	Events       int64  `json:"events"`       // events checked
	Requests     int64  `json:"requests"`     // request streams seen
	Attestations int64  `json:"attestations"` // attestations verified
	Checkpoints  int64  `json:"checkpoints"`  // checkpoints verified
	NewestSize   uint64 `json:"newest_size"`  // the size of the checkpoint the events are proved against
	NewestRoot   []byte `json:"newest_root,omitempty"`
	Witnesses    int    `json:"witnesses"` // witness keys whose cosignature of the newest checkpoint verified
	// Archived is how many leaves were checked by their archive's
	// compact range instead of their events (VerifyLive).
	Archived uint64 `json:"archived_leaves,omitempty"`
	Fault    *Fault `json:"fault,omitempty"`
}

// fault builds a Fault; the where-setters below fill it in.
func fault(code, format string, args ...any) *Fault {
	return &Fault{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (f *Fault) atLeaf(i uint64) *Fault { f.Leaf = &i; return f }

func (f *Fault) atCheckpoint(size uint64) *Fault { f.Checkpoint = &size; return f }

func (f *Fault) atEvent(e *Event) *Fault {
	leaf := e.Leaf
	f.Leaf, f.Stream, f.Version = &leaf, e.Stream, e.Version
	return f
}
