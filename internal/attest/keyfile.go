package attest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PEM block types of the key files.
const (
	pemPrivateKey = "PRIVATE KEY" // PKCS #8
	pemPublicKey  = "PUBLIC KEY"  // PKIX
)

// Key file modes written by GenerateKeyFiles.
const (
	privateKeyMode fs.FileMode = 0o600
	publicKeyMode  fs.FileMode = 0o644
)

// GenerateKeyFiles generates an Ed25519 key pair and writes the private key
// to privPath (PEM "PRIVATE KEY", PKCS #8, mode 0600) and the public key to
// pubPath (PEM "PUBLIC KEY", PKIX, mode 0644). It refuses to overwrite an
// existing file and leaves no private key behind if the public key cannot be
// written. It returns the key id (see PublicKeyID).
func GenerateKeyFiles(privPath, pubPath string) (keyID string, err error) {
	if filepath.Clean(privPath) == filepath.Clean(pubPath) {
		return "", fmt.Errorf("attest: generate keys: private and public key paths are both %s", privPath)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("attest: generate keys: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("attest: generate keys: marshal private key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("attest: generate keys: marshal public key: %w", err)
	}
	// Fail before creating anything if the public key file is in the way.
	if _, err := os.Lstat(pubPath); err == nil {
		return "", fmt.Errorf("attest: generate keys: %s: %w", pubPath, fs.ErrExist)
	}
	if err := writeNewFile(privPath, pemPrivateKey, privDER, privateKeyMode); err != nil {
		return "", err
	}
	if err := writeNewFile(pubPath, pemPublicKey, pubDER, publicKeyMode); err != nil {
		return "", errors.Join(err, removeFile(privPath))
	}
	return PublicKeyID(pub), nil
}

// writeNewFile writes der as one PEM block to a file that must not exist,
// with exactly mode (whatever the umask), and syncs it.
func writeNewFile(path, blockType string, der []byte, mode fs.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("attest: write key file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("attest: write key file %s: %w", path, cerr)
		}
		if err != nil {
			err = errors.Join(err, removeFile(path))
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("attest: write key file %s: %w", path, err)
	}
	if err := pem.Encode(f, &pem.Block{Type: blockType, Bytes: der}); err != nil {
		return fmt.Errorf("attest: write key file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("attest: write key file %s: %w", path, err)
	}
	return nil
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("attest: remove partial key file: %w", err)
	}
	return nil
}

// LoadSigner reads an Ed25519 private key written by GenerateKeyFiles. It
// refuses a file that is not a regular file or whose mode gives group or
// others any access (mode & 0077 != 0).
func LoadSigner(privPath string) (*Signer, error) {
	priv, err := LoadPrivateKey(privPath)
	if err != nil {
		return nil, err
	}
	return NewSigner(priv), nil
}

// LoadPrivateKey reads an Ed25519 private key written by GenerateKeyFiles
// (`execledger keygen`), with LoadSigner's checks: skill publishers sign
// artifacts with it.
func LoadPrivateKey(privPath string) (ed25519.PrivateKey, error) {
	der, err := readPrivateKeyFile(privPath)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("attest: private key file %s: %w: %w", privPath, ErrKeyFile, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("attest: private key file %s: %w: %T is not an Ed25519 key", privPath, ErrKeyFile, key)
	}
	return priv, nil
}

// readPrivateKeyFile checks the permissions of the open file (not the path,
// which could be swapped in between) and returns the PEM block's DER bytes.
func readPrivateKeyFile(privPath string) ([]byte, error) {
	f, err := os.Open(privPath)
	if err != nil {
		return nil, fmt.Errorf("attest: private key file: %w: %w", ErrKeyFile, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("attest: private key file: %w: %w", ErrKeyFile, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("attest: private key file %s: %w: not a regular file", privPath, ErrKeyFile)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("attest: private key file %s has mode %04o: %w (run chmod 600 %s)", privPath, perm, ErrKeyPermissions, privPath)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("attest: private key file %s: %w: %w", privPath, ErrKeyFile, err)
	}
	return decodePEM(privPath, buf.Bytes(), pemPrivateKey)
}

// LoadPublicKey reads an Ed25519 public key written by GenerateKeyFiles.
func LoadPublicKey(pubPath string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(pubPath)
	if err != nil {
		return nil, fmt.Errorf("attest: public key file: %w: %w", ErrKeyFile, err)
	}
	der, err := decodePEM(pubPath, b, pemPublicKey)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("attest: public key file %s: %w: %w", pubPath, ErrKeyFile, err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("attest: public key file %s: %w: %T is not an Ed25519 key", pubPath, ErrKeyFile, key)
	}
	return pub, nil
}

// decodePEM returns the DER bytes of the single PEM block of type
// blockType that b must consist of.
func decodePEM(path string, b []byte, blockType string) ([]byte, error) {
	block, rest := pem.Decode(b)
	switch {
	case block == nil:
		return nil, fmt.Errorf("attest: key file %s: %w: no PEM block", path, ErrKeyFile)
	case block.Type != blockType:
		return nil, fmt.Errorf("attest: key file %s: %w: PEM block %q, want %q", path, ErrKeyFile, block.Type, blockType)
	case len(block.Headers) != 0:
		return nil, fmt.Errorf("attest: key file %s: %w: PEM headers (encrypted keys are not supported)", path, ErrKeyFile)
	case len(bytes.TrimSpace(rest)) != 0:
		return nil, fmt.Errorf("attest: key file %s: %w: data after the PEM block", path, ErrKeyFile)
	}
	return block.Bytes, nil
}
