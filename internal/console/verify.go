package console

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// attestationCheck is what the request page says of its attestation.
type attestationCheck struct {
	Digest    string
	KeyID     string
	Envelope  bool // the login could read the envelope
	Statement string
	Predicate *attest.Execution
	// Verified: the envelope's signature verifies with a configured key
	// and its digest is the request's attestation_digest.
	Verified bool
	Status   string // in plain words
}

// checkAttestation decodes the DSSE envelope and checks its signature
// against the configured keys and its digest against the request row's.
func checkAttestation(digest string, env *signedEnvelope, keys Keys) *attestationCheck {
	a := &attestationCheck{Digest: digest}
	if env == nil {
		a.Status = "The envelope is not shown: this login may not read the log, or the attestation is not in the log yet."
		return a
	}
	a.KeyID, a.Envelope = env.KeyID, true
	raw := []byte(env.Envelope)
	var e attest.Envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		a.Status = "The recorded envelope is not a DSSE envelope: " + err.Error()
		return a
	}
	if payload, err := base64.StdEncoding.DecodeString(e.Payload); err == nil {
		a.Statement = prettyJSON(payload)
		var st attest.Statement
		if json.Unmarshal(payload, &st) == nil {
			a.Predicate = &st.Predicate
		}
	}
	if got := attest.Digest(raw); got != digest {
		a.Status = fmt.Sprintf("Not verified: the envelope's digest is %s, but the request records %s.", got, digest)
		return a
	}
	if len(keys.Attestation) == 0 {
		a.Status = "Signature not checked: the console has no attestation key configured (console.attest_keys)."
		return a
	}
	var tried []ed25519.PublicKey
	for _, s := range e.Signatures {
		for _, p := range keys.Attestation {
			if s.KeyID == "" || s.KeyID == attest.PublicKeyID(p) {
				tried = append(tried, p)
			}
		}
	}
	if len(tried) == 0 {
		a.Status = fmt.Sprintf("Not verified: signed by key %s, which is none of the configured attestation keys.", env.KeyID)
		return a
	}
	var err error
	for _, p := range tried {
		var st *attest.Statement
		if st, err = attest.Verify(raw, p); err == nil {
			a.Predicate, a.Verified = &st.Predicate, true
			a.Status = "Verified: the signature checks with configured key " + attest.PublicKeyID(p) + " and the digest matches the request."
			return a
		}
	}
	a.Status = "Not verified: the signature does not check: " + err.Error()
	return a
}

// proofCheck is what the request page says of the request's events in
// the Merkle log.
type proofCheck struct {
	Checkpoint *ledger.Checkpoint
	RootB64    string
	// NoteStatus says whether the checkpoint's signature verifies with
	// the configured log key.
	NoteOK     bool
	NoteStatus string
	Events     []eventProof
	Error      string
}

type eventProof struct {
	Version int64
	Type    string
	Leaf    *uint64
	OK      bool
	Status  string
}

// checkProofs proves each event against the newest published checkpoint
// (export.Prove, as `execledger prove` does) and checks every proof here:
// the leaf hash of the event's bytes, through the proof's hashes, must
// give the checkpoint's root; the checkpoint must carry the log key's
// signature.
func (s *Server) checkProofs(r *http.Request, sess *session, id uuid.UUID) *proofCheck {
	pc := &proofCheck{}
	ps, err := export.Prove(r.Context(), sess.read, id.String())
	switch {
	case errors.Is(err, export.ErrNoRequest):
		pc.Error = "The request has no events in the log yet."
		return pc
	case isPermission(err):
		pc.Error = "This login may not read the Merkle log (ledger_auditor or ledger_admin may)."
		return pc
	case err != nil:
		pc.Error = "Proving failed: " + err.Error()
		return pc
	}
	pc.Checkpoint = ps.Checkpoint
	if cp := ps.Checkpoint; cp != nil {
		pc.RootB64 = base64.StdEncoding.EncodeToString(cp.Root)
		pc.NoteOK, pc.NoteStatus = checkNote(cp, s.opts.Keys.Log)
	}
	for _, p := range ps.Events {
		ep := eventProof{Version: p.Event.Version, Type: p.Event.Type, Leaf: p.Leaf}
		switch {
		case p.Mismatch:
			ep.Status = "Bytes changed: the event does not hash to the leaf the log sealed for it."
		case p.Proof == nil && ps.Checkpoint == nil:
			ep.Status = "Not provable yet: the log has no published checkpoint."
		case p.Proof == nil:
			ep.Status = "Not yet sealed under the newest published checkpoint."
		default:
			hashes := make([][]byte, len(p.Proof.Hashes))
			for i := range p.Proof.Hashes {
				hashes[i] = p.Proof.Hashes[i][:]
			}
			leafHash := rfc6962.DefaultHasher.HashLeaf(p.Event.Encoding())
			err := proof.VerifyInclusion(rfc6962.DefaultHasher, *p.Leaf, ps.Checkpoint.Size, leafHash, hashes, ps.Checkpoint.Root)
			if err != nil {
				ep.Status = "Inclusion proof does not check: " + err.Error()
			} else {
				ep.OK = true
				ep.Status = fmt.Sprintf("Included: leaf %d of checkpoint %d, proof of %d hashes checked against its root.", *p.Leaf, ps.Checkpoint.Size, len(hashes))
			}
		}
		pc.Events = append(pc.Events, ep)
	}
	return pc
}

// checkNote verifies the checkpoint's signature with the log key.
func checkNote(cp *ledger.Checkpoint, key note.Verifier) (bool, string) {
	if key == nil {
		return false, "Checkpoint signature not checked: the console has no log key configured (console.log_key)."
	}
	n, err := note.Open(cp.Note, note.VerifierList(key))
	if err != nil {
		return false, "Checkpoint signature does not verify with log key " + bundle.Fingerprint(key) + ": " + err.Error()
	}
	if !bytes.Equal([]byte(n.Text), cp.Body()) {
		return false, "Checkpoint text differs from what its signature covers."
	}
	return true, "Checkpoint signed by log key " + bundle.Fingerprint(key) + "."
}

// requestBundle sends the request's export bundle: its events with their
// inclusion proofs against the newest published checkpoint, what
// `execledger export --request ID` writes.
func (s *Server) requestBundle(w http.ResponseWriter, r *http.Request, sess *session) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, http.StatusBadRequest, "not a request id")
		return
	}
	var b bytes.Buffer
	_, err = export.Export(r.Context(), sess.read, export.Options{Scope: bundle.Scope{Request: id.String()}, Wait: -1}, bundle.NewWriter(&b))
	switch {
	case errors.Is(err, export.ErrNoRequest):
		s.fail(w, sess, http.StatusNotFound, fmt.Sprintf("No request %s in the log.", id))
		return
	case errors.Is(err, export.ErrNoCheckpoint), errors.Is(err, export.ErrNoCleanCheckpoint):
		s.fail(w, sess, http.StatusConflict, "There is no clean published checkpoint holding this request yet; try again in a few seconds.")
		return
	case err != nil:
		s.dbFail(w, sess, "the request's bundle", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="request-%s.bundle"`, id))
	_, _ = b.WriteTo(w)
}
