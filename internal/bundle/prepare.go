package bundle

import (
	"encoding/json"
	"strings"

	"github.com/execledger/execledger/internal/contract"

	"github.com/execledger/execledger/ledger"
)

// requestPrefix begins the name of every request stream.
const requestPrefix = contract.RequestPrefix

// Event types the request checks read.
const (
	typeRequested   = "tool.requested" // the types are internal/contract's
	typeDecided     = "policy.decided"
	typeReqDecided  = "request.decided" // the compact grammar's claim and decision
	typeApprovalNo  = "approval.denied"
	typeFinished    = "execution.finished"
	typeCancelled   = "request.cancelled"
	typeLeaseExpiry = "lease.expired"
	typeAttested    = "attestation.signed"
	typeCompleted   = "execution.completed" // the compact grammar's outcome and attestation
)

// prepared is a record with what can be worked out from it alone, in any
// order and in parallel with other records: the event's hashes, the facts
// of its payload, the attestation's signature check. The verifier applies
// them in order.
type prepared struct {
	rec   Record
	fault *Fault // the line is not a record
	ev    eventFacts
}

// eventFacts is what prepare works out of an event.
type eventFacts struct {
	encHash  [32]byte // EncodingHash of its encoding: its event hash
	leafHash [32]byte // LeafHash of its encoding
	payload  *payloadFacts
	// payloadErr says why a request event's payload could not be read.
	payloadErr string
	att        *attestationFacts
}

// payloadFacts are the members of request events' payloads that the
// request checks read. Input and Output keep the members' exact bytes.
type payloadFacts struct {
	RequestID         string          `json:"request_id"`
	Input             json.RawMessage `json:"input"`
	InputDigest       string          `json:"input_digest"`
	Decision          string          `json:"decision"`
	State             string          `json:"state"`
	ErrorKind         *string         `json:"error_kind"`
	Output            json.RawMessage `json:"output"`
	Action            string          `json:"action"`
	AttestationDigest string          `json:"attestation_digest"`
	Envelope          *string         `json:"envelope"`
}

// preparer prepares records. It reads only the keys, which do not change,
// so one preparer per goroutine can work on any records.
type preparer struct {
	keys Keys
	buf  []byte // encoding scratch
}

// line parses and prepares one line.
func (p *preparer) line(b []byte) prepared {
	r, err := ParseRecord(b)
	if err != nil {
		return prepared{fault: fault(Malformed, "%v", err)}
	}
	return p.record(r)
}

func (p *preparer) record(r Record) prepared {
	e, ok := r.(*Event)
	if !ok || e == nil {
		return prepared{rec: r}
	}
	var f eventFacts
	p.buf = e.encoding(p.buf[:0])
	f.encHash, f.leafHash = ledger.EncodingHash(p.buf), ledger.LeafHash(p.buf)
	if strings.HasPrefix(e.Stream, requestPrefix) {
		switch e.Type {
		case typeRequested, typeDecided, typeReqDecided, typeFinished, typeLeaseExpiry:
			var pf payloadFacts
			if err := json.Unmarshal(e.Payload, &pf); err != nil {
				f.payloadErr = err.Error()
			} else {
				f.payload = &pf
			}
		case typeAttested:
			var pf payloadFacts
			if err := json.Unmarshal(e.Payload, &pf); err != nil {
				f.att = &attestationFacts{fault: fault(BadSignature, "the attestation.signed payload cannot be read: %v", err)}
			} else {
				f.att = p.attestation(&pf)
				f.att.requestID = pf.RequestID
			}
		case typeCompleted:
			// An outcome and its attestation: both facts from one payload.
			var pf payloadFacts
			if err := json.Unmarshal(e.Payload, &pf); err != nil {
				f.payloadErr = err.Error()
			} else {
				f.payload = &pf
				f.att = p.attestation(&pf)
				f.att.requestID = pf.RequestID
			}
		}
	}
	return prepared{rec: r, ev: f}
}
