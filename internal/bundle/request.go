package bundle

import (
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/contract"
)

// request is what the verifier remembers of a request stream.
type request struct {
	id    string
	input []byte // tool.requested's input member, exactly

	// The final outcome, once read: the event, and what its attestation
	// must say.
	outcome        string
	outcomeLeaf    uint64
	outcomeVersion int64
	success        bool
	errorKind      string
	output         []byte // execution.finished's output member; nil when absent or null

	attested bool
}

// requestEvent checks e in its request's lifecycle: tool.requested first
// and once; then anything up to the final outcome; after it only
// request.cancelled and the attestation; nothing after the attestation.
// In the compact grammar (021) request.decided may be the outcome (a
// denial), and execution.completed is the outcome and its attestation.
func (v *Verifier) requestEvent(s *stream, id string, e *Event, facts *eventFacts) *Fault {
	if facts.payloadErr != "" {
		return fault(SubjectMismatch, "the %s payload cannot be read: %s", e.Type, facts.payloadErr).atEvent(e)
	}
	r := s.req
	switch {
	case e.Version == 1:
		return v.requested(s, id, e, facts.payload)
	case r == nil: // a stream that began with another event has failed already
		return nil
	case e.Type == typeRequested:
		return fault(Reordered, "a second tool.requested in request %s", id).atEvent(e)
	case r.attested:
		return fault(Reordered, "%s follows the attestation of request %s", e.Type, id).atEvent(e)
	case e.Type == typeAttested && r.outcome == "":
		return fault(Reordered, "attestation.signed before request %s has a final outcome", id).atEvent(e)
	case e.Type == typeAttested:
		return v.attestation(r, e, facts.att)
	case e.Type == typeCompleted && r.outcome != "":
		return fault(Reordered, "%s follows the final outcome of request %s (%s at leaf %d)", e.Type, id, r.outcome, r.outcomeLeaf).atEvent(e)
	case e.Type == typeCompleted:
		// The compact grammar: the outcome, then at once its attestation.
		r.settle(e, facts.payload)
		return v.attestation(r, e, facts.att)
	case r.outcome != "" && e.Type != typeCancelled:
		return fault(Reordered, "%s follows the final outcome of request %s (%s at leaf %d)", e.Type, id, r.outcome, r.outcomeLeaf).atEvent(e)
	case r.outcome == "":
		r.settle(e, facts.payload)
	}
	return nil
}

// requested checks a request's first event: tool.requested, whose
// input_digest is the digest of its exact input.
func (v *Verifier) requested(s *stream, id string, e *Event, p *payloadFacts) *Fault {
	if e.Type != typeRequested {
		return fault(Reordered, "request %s begins with %s, not tool.requested", id, e.Type).atEvent(e)
	}
	if len(p.Input) == 0 {
		return fault(SubjectMismatch, "tool.requested of request %s has no input", id).atEvent(e)
	}
	if d := attest.Digest(p.Input); p.InputDigest != d {
		return fault(SubjectMismatch, "tool.requested of request %s records input_digest %q, its input's digest is %s", id, p.InputDigest, d).
			atEvent(e)
	}
	s.req = &request{id: id, input: p.Input}
	v.requests = append(v.requests, s.req)
	v.rep.Requests++
	return nil
}

// settle records e as the request's final outcome if it is one: a policy
// denial, an approval denial, the execution's end, a cancellation, a lease
// expiry that did not requeue the request.
func (r *request) settle(e *Event, p *payloadFacts) {
	kind := func() string {
		if p.ErrorKind == nil {
			return ""
		}
		return *p.ErrorKind
	}
	switch e.Type {
	case typeDecided, typeReqDecided:
		if p.Decision != attest.DecisionDeny {
			return
		}
		r.errorKind = kind()
	case typeApprovalNo:
		r.errorKind = contract.KindApprovalDenied
	case typeFinished, typeCompleted:
		r.errorKind, r.success = kind(), p.State == contract.StateSucceeded
		if string(p.Output) != "null" {
			r.output = p.Output
		}
	case typeCancelled:
		r.errorKind = contract.KindCancelled
	case typeLeaseExpiry:
		switch {
		case p.Action == "requeued":
			return
		case kind() != "":
			r.errorKind = kind()
		case p.Action == "cancelled":
			r.errorKind = contract.KindCancelled
		default:
			r.errorKind = contract.KindOutcomeUnknown
		}
	default:
		return
	}
	r.outcome, r.outcomeLeaf, r.outcomeVersion = e.Type, e.Leaf, e.Version
}
