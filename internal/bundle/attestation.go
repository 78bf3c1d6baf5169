package bundle

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"

	"github.com/execledger/execledger/internal/attest"
)

// attestationFacts is the part of an attestation.signed event's check that
// needs nothing but the event and the keys: the envelope's signature and
// digest.
type attestationFacts struct {
	fault     *Fault // code and message; the verifier says where
	st        *attest.Statement
	requestID string // the payload's request_id
}

// attestation checks an attestation.signed payload's envelope: JSON, of
// attest.PayloadType, signed by a given key (by keyid) with a signature
// that verifies, carrying a valid statement, and whose digest is the
// payload's attestation_digest.
func (p *preparer) attestation(pf *payloadFacts) *attestationFacts {
	if pf.Envelope == nil {
		return &attestationFacts{fault: fault(BadSignature, "attestation.signed has no envelope")}
	}
	env := []byte(*pf.Envelope)
	var e attest.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		return &attestationFacts{fault: fault(BadSignature, "the attestation's envelope is not JSON: %v", err)}
	}
	if e.PayloadType != attest.PayloadType {
		return &attestationFacts{fault: fault(BadSignature, "the attestation's envelope has payloadType %q, not %q", e.PayloadType, attest.PayloadType)}
	}
	keys, ids := p.signingKeys(e)
	if len(keys) == 0 {
		return &attestationFacts{fault: fault(UnknownKey, "the attestation is signed by key ids %q, none of them a given attestation key", ids)}
	}
	var st *attest.Statement
	var err error
	for _, k := range keys {
		if st, err = attest.Verify(env, k); err == nil {
			break
		}
	}
	if err != nil {
		code := BadSignature
		if errors.Is(err, attest.ErrInvalidStatement) || errors.Is(err, attest.ErrStatementType) || errors.Is(err, attest.ErrPredicateType) {
			code = SubjectMismatch
		}
		return &attestationFacts{fault: fault(code, "%v", err)}
	}
	if d := attest.Digest(env); pf.AttestationDigest != d {
		return &attestationFacts{fault: fault(SubjectMismatch, "attestation_digest is %q, the envelope's digest is %s", pf.AttestationDigest, d)}
	}
	return &attestationFacts{st: st}
}

// signingKeys returns the given attestation keys whose id is the keyid of
// one of e's signatures, and the keyids.
func (p *preparer) signingKeys(e attest.Envelope) ([]ed25519.PublicKey, []string) {
	var keys []ed25519.PublicKey
	var ids []string
	for _, s := range e.Signatures {
		ids = append(ids, s.KeyID)
		for _, k := range p.keys.Attestation {
			if attest.PublicKeyID(k) == s.KeyID && !slices.ContainsFunc(keys, func(x ed25519.PublicKey) bool { return x.Equal(k) }) {
				keys = append(keys, k)
			}
		}
	}
	return keys, ids
}

// attestation checks what an attestation states against its request as the
// bundle records it: the request, the exact input and output, the outcome
// and the log checkpoint it names.
func (v *Verifier) attestation(r *request, e *Event, a *attestationFacts) *Fault {
	if a.fault != nil {
		f := *a.fault
		return f.atEvent(e)
	}
	p := a.st.Predicate
	switch {
	case a.requestID != r.id:
		return fault(SubjectMismatch, "the attestation event names request %q, its stream is request %s", a.requestID, r.id).atEvent(e)
	case p.RequestID != r.id:
		return fault(SubjectMismatch, "the attestation is of request %q, its stream is request %s", p.RequestID, r.id).atEvent(e)
	}
	if err := verifySubjects(a.st, r); err != nil {
		return fault(SubjectMismatch, "%v", err).atEvent(e)
	}
	switch {
	case p.Success != r.success:
		return fault(SubjectMismatch, "the attestation says success %t, the request's outcome (%s at leaf %d) says %t",
			p.Success, r.outcome, r.outcomeLeaf, r.success).atEvent(e)
	case p.ErrorKind != r.errorKind:
		return fault(SubjectMismatch, "the attestation says error kind %q, the request's outcome (%s at leaf %d) says %q",
			p.ErrorKind, r.outcome, r.outcomeLeaf, r.errorKind).atEvent(e)
	}
	if c := p.LogCheckpoint; c != nil {
		if f := v.namedCheckpoint(c, e); f != nil {
			return f
		}
	}
	r.attested, r.input, r.output = true, nil, nil
	v.rep.Attestations++
	return nil
}

// verifySubjects checks the statement's subjects against the request's
// exact input and output bytes. No output (no execution.finished, or its
// output absent or null) is the empty string, or the text "null".
func verifySubjects(st *attest.Statement, r *request) error {
	err := st.VerifySubjects(r.input, r.output)
	if err != nil && r.output == nil && st.VerifySubjects(r.input, []byte("null")) == nil {
		return nil
	}
	return err
}

// namedCheckpoint checks the checkpoint an attestation names: one of the
// bundle's, and sealed before the attestation.
func (v *Verifier) namedCheckpoint(c *attest.LogCheckpoint, e *Event) *Fault {
	root, _ := base64.StdEncoding.DecodeString(c.RootHash) // attest.Verify has checked it
	i, found := slices.BinarySearchFunc(v.checkpoints, c.Size, func(cp checkpoint, size uint64) int {
		return cmp.Compare(cp.size, size)
	})
	if !found || c.Origin != v.origin || !bytes.Equal(v.checkpoints[i].root, root) {
		return fault(InconsistentCheckpoints, "the attestation names checkpoint %d (origin %q, root %s), which is not one of the bundle's checkpoints",
			c.Size, c.Origin, c.RootHash).atEvent(e).atCheckpoint(c.Size)
	}
	if e.Leaf < c.Size {
		return fault(Reordered, "the attestation names checkpoint %d, which already holds the attestation's own leaf %d", c.Size, e.Leaf).
			atEvent(e).atCheckpoint(c.Size)
	}
	return nil
}
