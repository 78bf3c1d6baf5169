package attest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Envelope is a DSSE envelope: payloadType, payload (standard base64) and
// signatures [{keyid, sig}].
type Envelope = dsse.Envelope

// Signature is one signature of an Envelope: keyid and sig (standard base64).
type Signature = dsse.Signature

// Signer signs statements with an Ed25519 private key. It is immutable and
// safe for concurrent use.
type Signer struct {
	priv  ed25519.PrivateKey
	pub   ed25519.PublicKey
	keyID string
	dsse  *dsse.EnvelopeSigner
}

// NewSigner returns a Signer for priv, which it copies. A key of the wrong
// length makes every Sign fail.
func NewSigner(priv ed25519.PrivateKey) *Signer {
	s := &Signer{priv: append(ed25519.PrivateKey(nil), priv...)}
	if len(priv) == ed25519.PrivateKeySize {
		s.pub = s.priv.Public().(ed25519.PublicKey)
		s.keyID = PublicKeyID(s.pub)
	}
	// NewEnvelopeSigner fails only without signers.
	s.dsse, _ = dsse.NewEnvelopeSigner(dsseSigner{s})
	return s
}

// PublicKeyID returns the key id of pub: "ed25519:" followed by the first 16
// hex digits (8 bytes) of the SHA-256 of the raw 32-byte public key.
func PublicKeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519:" + hex.EncodeToString(sum[:8])
}

// KeyID returns the signer's key id (see PublicKeyID), written into the
// keyid of every signature it makes.
func (s *Signer) KeyID() string { return s.keyID }

// PublicKey returns the public key auditors verify with.
func (s *Signer) PublicKey() ed25519.PublicKey {
	return append(ed25519.PublicKey(nil), s.pub...)
}

// Sign validates st, marshals it with encoding/json (struct field order,
// sorted map keys; timestamps converted to UTC), wraps it in a DSSE envelope
// of type PayloadType and signs PAE(PayloadType, payload).
// It returns the envelope, its canonical JSON bytes (what gets stored), and
// the digest of those bytes: "sha256:<hex>". Ed25519 is deterministic, so
// the same statement and key always give the same bytes.
func (s *Signer) Sign(st Statement) (env Envelope, envelopeJSON []byte, digest string, err error) {
	st.Predicate.StartedAt = st.Predicate.StartedAt.UTC()
	st.Predicate.FinishedAt = st.Predicate.FinishedAt.UTC()
	if err := st.validate(); err != nil {
		return Envelope{}, nil, "", fmt.Errorf("attest: sign: %w", err)
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return Envelope{}, nil, "", fmt.Errorf("attest: sign: marshal statement: %w", err)
	}
	return s.signPayload(PayloadType, payload)
}

// signPayload signs payload as it is; Sign's validation stops short of it.
func (s *Signer) signPayload(payloadType string, payload []byte) (Envelope, []byte, string, error) {
	if len(s.priv) != ed25519.PrivateKeySize {
		return Envelope{}, nil, "", fmt.Errorf("attest: sign: private key has %d bytes, want %d", len(s.priv), ed25519.PrivateKeySize)
	}
	env, err := s.dsse.SignPayload(context.Background(), payloadType, payload)
	if err != nil {
		return Envelope{}, nil, "", fmt.Errorf("attest: sign: %w", err)
	}
	envelopeJSON, err := json.Marshal(env)
	if err != nil {
		return Envelope{}, nil, "", fmt.Errorf("attest: sign: marshal envelope: %w", err)
	}
	return *env, envelopeJSON, Digest(envelopeJSON), nil
}

// dsseSigner adapts a Signer to dsse.Signer.
type dsseSigner struct{ s *Signer }

func (d dsseSigner) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(d.s.priv, data), nil
}

func (d dsseSigner) KeyID() (string, error) { return d.s.keyID, nil }
