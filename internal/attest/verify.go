package attest

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Verify checks an envelope as stored (its JSON) with pub and returns the
// statement it carries. It requires the payloadType to be PayloadType, at
// least one signature whose keyid is PublicKeyID(pub) or empty and which
// verifies over PAE(payloadType, payload) (signatures with another keyid are
// skipped), and a payload that is a valid Statement v1 with PredicateType
// (see Statement.Validate). It needs no other state: auditors can run it
// offline with only the public key.
func Verify(envelopeJSON []byte, pub ed25519.PublicKey) (*Statement, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("attest: verify: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	var env Envelope
	if err := json.Unmarshal(envelopeJSON, &env); err != nil {
		return nil, fmt.Errorf("attest: verify: %w: envelope: %w", ErrMalformed, err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("attest: verify: %w: %q, want %q", ErrPayloadType, env.PayloadType, PayloadType)
	}
	if len(env.Signatures) == 0 {
		return nil, fmt.Errorf("attest: verify: %w", ErrNoSignatures)
	}
	payload, err := verifySignatures(&env, pub)
	if err != nil {
		return nil, fmt.Errorf("attest: verify: %w", err)
	}
	return decodeStatement(payload)
}

// verifySignatures runs the DSSE verification and returns the payload.
func verifySignatures(env *Envelope, pub ed25519.PublicKey) ([]byte, error) {
	// Decode up front so that bad encoding is reported as such and not as a
	// signature failure.
	if !validBase64(env.Payload) {
		return nil, fmt.Errorf("%w: payload is not base64", ErrMalformed)
	}
	for i, sig := range env.Signatures {
		if !validBase64(sig.Sig) {
			return nil, fmt.Errorf("%w: signature %d is not base64", ErrMalformed, i)
		}
	}
	keyID := PublicKeyID(pub)
	// NewEnvelopeVerifier fails only without verifiers.
	ev, _ := dsse.NewEnvelopeVerifier(dsseVerifier{pub: pub, keyID: keyID})
	_, payload, err := ev.VerifyAndDecode(context.Background(), env)
	if err != nil {
		// err only says that 0 of 1 signatures were accepted.
		return nil, fmt.Errorf("%w %s", ErrSignature, keyID)
	}
	return payload, nil
}

func decodeStatement(payload []byte) (*Statement, error) {
	var st Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("attest: verify: %w: statement: %w", ErrMalformed, err)
	}
	if err := st.validate(); err != nil {
		return nil, fmt.Errorf("attest: verify: %w", err)
	}
	return &st, nil
}

// validBase64 reports whether s decodes as DSSE allows: standard or URL
// base64, padded.
func validBase64(s string) bool {
	if _, err := base64.StdEncoding.DecodeString(s); err == nil {
		return true
	}
	_, err := base64.URLEncoding.DecodeString(s)
	return err == nil
}

// dsseVerifier adapts an Ed25519 public key to dsse.Verifier.
type dsseVerifier struct {
	pub   ed25519.PublicKey
	keyID string
}

func (v dsseVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.pub, data, sig) {
		return errors.New("ed25519: invalid signature")
	}
	return nil
}

func (v dsseVerifier) KeyID() (string, error) { return v.keyID, nil }

func (v dsseVerifier) Public() crypto.PublicKey { return v.pub }
