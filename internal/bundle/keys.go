package bundle

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// Keys are the keys a verifier trusts.
type Keys struct {
	// Log verifies the log's checkpoint signatures; its Name() is the
	// log's origin.
	Log note.Verifier
	// Attestation are the keys attestations may be signed with (more than
	// one across a key rotation).
	Attestation []ed25519.PublicKey
	// Witnesses, when given, must each have cosigned the bundle's newest
	// checkpoint (C2SP tlog-cosignature).
	Witnesses []note.Verifier
}

// LoadKeys reads the log's verifier key (a note verifier key,
// "name+hash+base64", as `execledger keygen --note` writes it to FILE.pub),
// the attestation public keys (PEM, attest.LoadPublicKey) and the
// witnesses' verifier keys (a cosignature/v1 key, or a plain Ed25519 note
// key read as the cosignature/v1 key of the same Ed25519 key, which is
// what the witness signs with). Each may also be the key's text.
func LoadKeys(logKeyFile string, attestationKeyFiles, witnessKeyFiles []string) (Keys, error) {
	var k Keys
	var err error
	if k.Log, err = ledger.LoadNoteVerifier(logKeyFile); err != nil {
		return Keys{}, fmt.Errorf("bundle: log key: %w", err)
	}
	for _, f := range attestationKeyFiles {
		pub, err := attest.LoadPublicKey(f)
		if err != nil {
			return Keys{}, fmt.Errorf("bundle: %w", err)
		}
		k.Attestation = append(k.Attestation, pub)
	}
	for _, f := range witnessKeyFiles {
		w, err := ledger.LoadWitnessVerifier(f)
		if err != nil {
			return Keys{}, fmt.Errorf("bundle: witness key: %w", err)
		}
		k.Witnesses = append(k.Witnesses, w)
	}
	return k, k.validate()
}

// Fingerprint names a note key as bundle headers and messages do:
// "<name>+<8 hex digits of the key hash>".
func Fingerprint(v note.Verifier) string {
	return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
}

// validate refuses keys the verifier cannot use: no log key, a witness key
// that is the log key or given twice (note.Open would find two verifiers
// for one signature line), an attestation key of the wrong length.
func (k Keys) validate() error {
	if k.Log == nil {
		return errors.New("bundle: no log key")
	}
	seen := map[string]bool{Fingerprint(k.Log): true}
	for _, w := range k.Witnesses {
		if w == nil {
			return errors.New("bundle: nil witness key")
		}
		fp := Fingerprint(w)
		if seen[fp] {
			return fmt.Errorf("bundle: witness key %s given twice or also the log key", fp)
		}
		seen[fp] = true
	}
	for i, pub := range k.Attestation {
		if len(pub) != ed25519.PublicKeySize {
			return fmt.Errorf("bundle: attestation key %d has %d bytes, want %d", i, len(pub), ed25519.PublicKeySize)
		}
	}
	return nil
}
