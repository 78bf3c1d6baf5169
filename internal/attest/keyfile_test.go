package attest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyPaths returns private and public key paths in a fresh directory.
func keyPaths(t *testing.T) (priv, pub string) {
	t.Helper()
	dir := t.TempDir()
	return filepath.Join(dir, "attest.key"), filepath.Join(dir, "attest.pub")
}

func TestGenerateAndLoadKeyFiles(t *testing.T) {
	privPath, pubPath := keyPaths(t)
	keyID, err := GenerateKeyFiles(privPath, pubPath)
	if err != nil {
		t.Fatalf("GenerateKeyFiles: %v", err)
	}
	for path, want := range map[string]fs.FileMode{privPath: 0o600, pubPath: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %04o, want %04o", filepath.Base(path), fi.Mode().Perm(), want)
		}
	}
	assertPEMType(t, privPath, "PRIVATE KEY")
	assertPEMType(t, pubPath, "PUBLIC KEY")

	s, err := LoadSigner(privPath)
	if err != nil {
		t.Fatalf("LoadSigner: %v", err)
	}
	pub, err := LoadPublicKey(pubPath)
	if err != nil {
		t.Fatalf("LoadPublicKey: %v", err)
	}
	if s.KeyID() != keyID || PublicKeyID(pub) != keyID {
		t.Errorf("key ids: generated %q, signer %q, public key %q", keyID, s.KeyID(), PublicKeyID(pub))
	}
	if !pub.Equal(s.PublicKey()) {
		t.Fatalf("public key file does not match the private key")
	}
	_, envJSON, _, err := s.Sign(NewStatement(testInput, nil, deniedExecution()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(envJSON, pub); err != nil {
		t.Errorf("Verify with the loaded public key: %v", err)
	}
}

func assertPEMType(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(b); block == nil || block.Type != want {
		t.Errorf("%s: PEM block %v, want %q", filepath.Base(path), block, want)
	}
}

func TestLoadSignerRefusesLoosePermissions(t *testing.T) {
	privPath, pubPath := keyPaths(t)
	if _, err := GenerateKeyFiles(privPath, pubPath); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []fs.FileMode{0o644, 0o640, 0o604, 0o660, 0o601} {
		if err := os.Chmod(privPath, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSigner(privPath)
		if !errors.Is(err, ErrKeyPermissions) {
			t.Fatalf("mode %04o: err = %v, want %v", mode, err, ErrKeyPermissions)
		}
		if !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), privPath) {
			t.Errorf("mode %04o: error %q does not name the file and the fix", mode, err)
		}
	}
	for _, mode := range []fs.FileMode{0o400, 0o600} {
		if err := os.Chmod(privPath, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSigner(privPath); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}

func TestGenerateKeyFilesDoesNotOverwrite(t *testing.T) {
	privPath, pubPath := keyPaths(t)
	if _, err := GenerateKeyFiles(privPath, pubPath); err != nil {
		t.Fatal(err)
	}
	priv0, pub0 := readFile(t, privPath), readFile(t, pubPath)
	if _, err := GenerateKeyFiles(privPath, pubPath); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second GenerateKeyFiles: err = %v, want %v", err, fs.ErrExist)
	}
	if !bytes.Equal(readFile(t, privPath), priv0) || !bytes.Equal(readFile(t, pubPath), pub0) {
		t.Fatalf("existing key files were modified")
	}

	// Only the private key exists: refused, the private key kept.
	dir := filepath.Dir(privPath)
	if _, err := GenerateKeyFiles(privPath, filepath.Join(dir, "new.pub")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("existing private key: err = %v, want %v", err, fs.ErrExist)
	}
	if !bytes.Equal(readFile(t, privPath), priv0) {
		t.Fatalf("existing private key was modified")
	}
	// Only the public key exists: refused, and no private key left behind.
	newPriv := filepath.Join(dir, "new.key")
	if _, err := GenerateKeyFiles(newPriv, pubPath); !errors.Is(err, fs.ErrExist) {
		t.Errorf("existing public key: err = %v, want %v", err, fs.ErrExist)
	}
	if _, err := os.Stat(newPriv); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a private key was left behind: stat err = %v", err)
	}
	if _, err := GenerateKeyFiles(newPriv, newPriv); err == nil {
		t.Errorf("GenerateKeyFiles with one path for both keys succeeded")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadRejectsBadKeyFiles(t *testing.T) {
	privPath, pubPath := keyPaths(t)
	if _, err := GenerateKeyFiles(privPath, pubPath); err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPriv, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	ecPub, err := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	privPEM, pubPEM := readFile(t, privPath), readFile(t, pubPath)

	for _, c := range []struct {
		name      string
		priv, pub []byte
	}{
		{"empty", nil, nil},
		{"garbage", []byte("not a key\n"), []byte("not a key\n")},
		{"garbage DER", pemOf("PRIVATE KEY", []byte("garbage")), pemOf("PUBLIC KEY", []byte("garbage"))},
		{"swapped block types", pubPEM, privPEM},
		{"legacy block type", pemOf("ED25519 PRIVATE KEY", []byte("x")), pemOf("ED25519 PUBLIC KEY", []byte("x"))},
		{"ECDSA keys", pemOf("PRIVATE KEY", ecPriv), pemOf("PUBLIC KEY", ecPub)},
		{"two blocks", append(append([]byte(nil), privPEM...), privPEM...), append(append([]byte(nil), pubPEM...), pubPEM...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p, q := filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")
			if err := os.WriteFile(p, c.priv, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(q, c.pub, 0o644); err != nil {
				t.Fatal(err)
			}
			if s, err := LoadSigner(p); !errors.Is(err, ErrKeyFile) || s != nil {
				t.Errorf("LoadSigner = %v, %v; want %v", s, err, ErrKeyFile)
			}
			if k, err := LoadPublicKey(q); !errors.Is(err, ErrKeyFile) || k != nil {
				t.Errorf("LoadPublicKey = %v, %v; want %v", k, err, ErrKeyFile)
			}
		})
	}
}

func TestLoadMissingKeyFiles(t *testing.T) {
	privPath, pubPath := keyPaths(t)
	if _, err := LoadSigner(privPath); !errors.Is(err, ErrKeyFile) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadSigner(missing) = %v", err)
	}
	if _, err := LoadPublicKey(pubPath); !errors.Is(err, ErrKeyFile) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadPublicKey(missing) = %v", err)
	}
	if _, err := LoadSigner(t.TempDir()); !errors.Is(err, ErrKeyFile) {
		t.Errorf("LoadSigner(directory) = %v, want %v", err, ErrKeyFile)
	}
}
