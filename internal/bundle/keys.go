package bundle

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/attest"
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
// "name+hash+base64", as `execledger keygen` writes it to FILE.pub), the
// attestation public keys (PEM, attest.LoadPublicKey) and the witnesses'
// verifier keys (see ParseWitnessKey).
func LoadKeys(logKeyFile string, attestationKeyFiles, witnessKeyFiles []string) (Keys, error) {
	var k Keys
	vkey, err := readKeyFile(logKeyFile)
	if err != nil {
		return Keys{}, err
	}
	if k.Log, err = ParseLogKey(vkey); err != nil {
		return Keys{}, fmt.Errorf("bundle: log key file %s: %w", logKeyFile, err)
	}
	for _, f := range attestationKeyFiles {
		pub, err := attest.LoadPublicKey(f)
		if err != nil {
			return Keys{}, fmt.Errorf("bundle: %w", err)
		}
		k.Attestation = append(k.Attestation, pub)
	}
	for _, f := range witnessKeyFiles {
		vkey, err := readKeyFile(f)
		if err != nil {
			return Keys{}, err
		}
		w, err := ParseWitnessKey(vkey)
		if err != nil {
			return Keys{}, fmt.Errorf("bundle: witness key file %s: %w", f, err)
		}
		k.Witnesses = append(k.Witnesses, w)
	}
	return k, k.validate()
}

// ParseLogKey parses a log verifier key: an Ed25519 note verifier key
// "name+hash+base64" (note.NewVerifier).
func ParseLogKey(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("not a note verifier key: %w", err)
	}
	return v, nil
}

// ParseWitnessKey parses a witness verifier key for C2SP
// tlog-cosignature: a cosignature/v1 key (algorithm 0x04) or a plain
// Ed25519 note key (0x01), which is read as the cosignature/v1 key of the
// same Ed25519 key, as the witness signs with it (its key hash is then the
// cosignature/v1 one, not the hash written in vkey).
func ParseWitnessKey(vkey string) (note.Verifier, error) {
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, fmt.Errorf("not a witness verifier key: %w", err)
	}
	return v, nil
}

// Fingerprint names a note key as bundle headers and messages do:
// "<name>+<8 hex digits of the key hash>".
func Fingerprint(v note.Verifier) string {
	return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
}

func readKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("bundle: key file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("bundle: key file %s holds more than one line", path)
	}
	return s, nil
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
