package ledger

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Note keys sign the log's checkpoints (the log key) and witnesses'
// cosignatures (a witness key). A key pair is two text files in the
// golang.org/x/mod/sumdb/note encodings: FILE holds the signer key
// (PRIVATE+KEY+name+hash+base64, mode 0600), FILE.pub the verifier key
// (name+hash+base64) that auditors and witnesses are given. The log key's
// name is the log's origin, the first line of every checkpoint.
//
// A witness's public key is written in the C2SP tlog-cosignature form
// (algorithm 0x04, timestamped cosignature/v1), whose key hash is the one
// its cosignature lines carry.

// GenerateNoteKey writes a new log key named name to path and path+".pub"
// and returns the verifier key.
func GenerateNoteKey(name, path string) (string, error) {
	return generateNoteKey(name, path, false)
}

// GenerateWitnessKey writes a new witness key named name to path and
// path+".pub" and returns the verifier key (cosignature/v1).
func GenerateWitnessKey(name, path string) (string, error) {
	return generateNoteKey(name, path, true)
}

func generateNoteKey(name, path string, witness bool) (string, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return "", fmt.Errorf("ledger: generate note key %q: %w", name, err)
	}
	if witness {
		if vkey, err = fnote.VKeyToCosignatureV1(vkey); err != nil {
			return "", fmt.Errorf("ledger: generate witness key %q: %w", name, err)
		}
	}
	if _, err := os.Lstat(path + ".pub"); err == nil {
		return "", fmt.Errorf("ledger: %s.pub: %w", path, fs.ErrExist)
	}
	if err := writeNew(path, skey+"\n", 0o600); err != nil {
		return "", err
	}
	if err := writeNew(path+".pub", vkey+"\n", 0o644); err != nil {
		return "", errors.Join(err, os.Remove(path))
	}
	return vkey, nil
}

func writeNew(path, text string, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("ledger: write key: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("ledger: write key %s: %w", path, err), os.Remove(path))
	}
	return nil
}

func readKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("ledger: read key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// LoadNoteSigner reads the log's signer key.
func LoadNoteSigner(path string) (note.Signer, error) {
	skey, err := readKey(path)
	if err != nil {
		return nil, err
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("ledger: %s is not a note signer key (execledger keygen --note writes one): %w", path, err)
	}
	return s, nil
}

// LoadNoteVerifier reads the log's verifier key (a FILE.pub), or takes
// the key itself when path is a key rather than a file.
func LoadNoteVerifier(path string) (note.Verifier, error) {
	vkey, err := keyOrFile(path)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("ledger: %s is not a note verifier key (the .pub that execledger keygen --note writes): %w", path, err)
	}
	return v, nil
}

// LoadWitnessSigner reads a witness's signer key; it signs timestamped
// cosignatures (C2SP tlog-cosignature, cosignature/v1).
func LoadWitnessSigner(path string) (note.Signer, error) {
	skey, err := readKey(path)
	if err != nil {
		return nil, err
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, fmt.Errorf("ledger: %s is not a witness signer key (execledger keygen --witness writes one): %w", path, err)
	}
	return s, nil
}

// LoadWitnessVerifier reads a witness's verifier key (a file or the key).
func LoadWitnessVerifier(path string) (note.Verifier, error) {
	vkey, err := keyOrFile(path)
	if err != nil {
		return nil, err
	}
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, fmt.Errorf("ledger: %s is not a witness verifier key: %w", path, err)
	}
	return v, nil
}

// keyOrFile returns path's content, or path itself when it names no file
// and has the form of a verifier key (name+hash+base64, whose base64 may
// hold more '+').
func keyOrFile(path string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && strings.Count(path, "+") >= 2 {
		return path, nil
	}
	return readKey(path)
}
