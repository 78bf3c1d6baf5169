package artifact

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/execledger/execledger/internal/attest"
)

// Domain tags: a payload digest is of nothing but an artifact's payload,
// and a skill signature cannot be any other signature made with the
// publisher's key.
const (
	payloadTag   = "execledger.skill.payload.v1"
	signatureTag = "execledger.skill.signature.v1\x00"
)

// PayloadDigest is the digest of every file of files but signature.json:
// SHA-256 of the payload tag, then for each file in byte order of its
// path, the path and the content, each preceded by its length as a
// big-endian uint64.
func PayloadDigest(files map[string][]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(payloadTag))
	var n [8]byte
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if p == FileSignature {
			continue
		}
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
		binary.BigEndian.PutUint64(n[:], uint64(len(files[p])))
		h.Write(n[:])
		h.Write(files[p])
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// PayloadDigestString is "sha256:<hex>".
func PayloadDigestString(d [32]byte) string { return "sha256:" + hex.EncodeToString(d[:]) }

func signedMessage(d [32]byte) []byte { return append([]byte(signatureTag), d[:]...) }

// Sign signs a payload digest. It panics, as ed25519.Sign does, when key
// is not an Ed25519 private key.
func Sign(key ed25519.PrivateKey, payloadDigest [32]byte) []byte {
	return ed25519.Sign(key, signedMessage(payloadDigest))
}

// VerifySignature reports whether sig is pub's signature of payloadDigest.
func VerifySignature(pub ed25519.PublicKey, payloadDigest [32]byte, sig []byte) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, signedMessage(payloadDigest), sig)
}

// signatureFile is signature.json, its keys in this order.
type signatureFile struct {
	Version       int    `json:"version"`
	Algorithm     string `json:"algorithm"`
	Publisher     string `json:"publisher"`
	KeyID         string `json:"key_id"`
	PublicKey     string `json:"public_key"`
	PayloadDigest string `json:"payload_digest"`
	Signature     string `json:"signature"`
}

func signatureJSON(s Signature, payloadDigest [32]byte) ([]byte, error) {
	return json.MarshalIndent(signatureFile{Version: 1, Algorithm: "ed25519", Publisher: s.Publisher, KeyID: s.KeyID,
		PublicKey: base64.StdEncoding.EncodeToString(s.PublicKey), PayloadDigest: PayloadDigestString(payloadDigest),
		Signature: base64.StdEncoding.EncodeToString(s.Sig)}, "", "  ")
}

// parseSignature reads signature.json, which must name the payload
// digest d and be in the form Pack writes: signature.json is outside the
// signed payload, so it has one encoding or a byte of it could change
// unnoticed (JSON's case-insensitive keys, whitespace, base64's unused
// bits).
func parseSignature(b []byte, d [32]byte) (Signature, error) {
	var f signatureFile
	if err := strictJSON(b, &f); err != nil {
		return Signature{}, fmt.Errorf("%w: %v", ErrSignatureFormat, err)
	}
	pub, err1 := base64.StdEncoding.DecodeString(f.PublicKey)
	sig, err2 := base64.StdEncoding.DecodeString(f.Signature)
	s := Signature{Publisher: f.Publisher, KeyID: f.KeyID, PublicKey: pub, Sig: sig}
	switch {
	case f.Version != 1 || f.Algorithm != "ed25519":
		return Signature{}, fmt.Errorf("%w: version %d, algorithm %q (want 1, ed25519)", ErrSignatureFormat, f.Version, f.Algorithm)
	case err1 != nil || len(pub) != ed25519.PublicKeySize:
		return Signature{}, fmt.Errorf("%w: public_key is not a base64 Ed25519 public key", ErrSignatureFormat)
	case err2 != nil || len(sig) != ed25519.SignatureSize:
		return Signature{}, fmt.Errorf("%w: signature is not a base64 Ed25519 signature", ErrSignatureFormat)
	case f.KeyID != attest.PublicKeyID(pub):
		return Signature{}, fmt.Errorf("%w: key_id %q is not its public key's (%s)", ErrSignatureFormat, f.KeyID, attest.PublicKeyID(pub))
	case f.Publisher == "":
		return Signature{}, fmt.Errorf("%w: no publisher", ErrSignatureFormat)
	case f.PayloadDigest != PayloadDigestString(d):
		return Signature{}, fmt.Errorf("%w: it names payload %s; the payload is %s", ErrSignatureFormat, f.PayloadDigest, PayloadDigestString(d))
	}
	if canon, err := signatureJSON(s, d); err != nil || !bytes.Equal(canon, b) {
		return Signature{}, fmt.Errorf("%w: not in the form Pack writes", ErrSignatureFormat)
	}
	return s, nil
}

// strictJSON decodes one JSON value, refusing unknown fields and
// trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
