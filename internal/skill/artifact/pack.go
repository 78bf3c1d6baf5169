package artifact

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/execledger/execledger/internal/attest"
)

// Info describes the skill Pack packs, from its manifest (which Pack does
// not parse: callers do).
type Info struct {
	SkillID, Version, Publisher string
	Builder                     string // who packed it, for the provenance, e.g. "execledger skill package"; may be empty
}

// Pack builds the signed artifact of the skill in dir: skill.toml,
// modules/*.wasm and assets/ (any other entry of dir is left out), with
// the SBOM, provenance, integrity list and signature it generates. It
// refuses links, devices and every other file that is not regular or a
// directory (never following a link), a generated file's name at dir's
// top level, anything but .wasm files in modules/, and anything over the
// limits Open enforces.
//
// The archive is deterministic: the same files, Info and key give the
// same bytes under the same build (see encode for what a build may
// change).
func Pack(dir string, key ed25519.PrivateKey, info Info) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("artifact: not an Ed25519 private key")
	}
	if info.SkillID == "" || info.Version == "" || info.Publisher == "" {
		return nil, errors.New("artifact: Info needs the skill id, version and publisher")
	}
	files, err := collect(dir)
	if err != nil {
		return nil, err
	}
	if files[FileSBOM], err = sbom(files, info); err != nil {
		return nil, err
	}
	if files[FileProvenance], err = provenance(files, info); err != nil {
		return nil, err
	}
	if files[FileIntegrity], err = integrity(files); err != nil {
		return nil, err
	}
	d := PayloadDigest(files)
	pub := key.Public().(ed25519.PublicKey)
	sig := Signature{Publisher: info.Publisher, KeyID: attest.PublicKeyID(pub), PublicKey: pub, Sig: Sign(key, d)}
	if files[FileSignature], err = signatureJSON(sig, d); err != nil {
		return nil, err
	}
	return encode(files)
}

// collect reads the skill's own files from dir, through an os.Root so
// that even a link swapped in while Pack runs cannot lead outside dir.
func collect(dir string) (map[string][]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact: %w", err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("artifact: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		switch name := e.Name(); {
		case generated[name]:
			return nil, fmt.Errorf("%w: %s is written by the packer; remove it from %s", ErrLayout, name, dir)
		case name == FileManifest:
			err = addFile(root, files, name)
		case name == "modules" || name == "assets":
			err = addTree(root, files, name)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, ok := files[FileManifest]; !ok {
		return nil, fmt.Errorf("%w: %s has no %s", ErrLayout, dir, FileManifest)
	}
	for p := range files {
		if isModule(p) {
			return files, nil
		}
	}
	return nil, fmt.Errorf("%w: %s has no modules/*.wasm", ErrLayout, dir)
}

// addTree adds the files under sub (addFile refuses links and special
// files), and refuses anything but modules in modules/.
func addTree(root *os.Root, files map[string][]byte, sub string) error {
	if fi, err := root.Lstat(sub); err != nil {
		return fmt.Errorf("artifact: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%w: %s is a %s, not a directory", ErrPath, sub, kind(fi.Mode()))
	}
	return fs.WalkDir(root.FS(), sub, func(rel string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return fmt.Errorf("artifact: %w", err)
		case rel == sub:
			return nil
		case sub == "modules" && (d.IsDir() || !isModule(rel)):
			return fmt.Errorf("%w: %s: modules/ holds only .wasm modules", ErrLayout, rel)
		case d.IsDir():
			return nil
		}
		return addFile(root, files, rel)
	})
}

// addFile reads the regular file rel, no larger than MaxEntry, checking
// that the file opened is the one examined.
func addFile(root *os.Root, files map[string][]byte, rel string) error {
	if err := checkPath(rel); err != nil {
		return err
	}
	if len(files)+len(generated) >= MaxEntries {
		return fmt.Errorf("%w: more than %d files, the %d generated ones included", ErrLimit, MaxEntries, len(generated))
	}
	name := filepath.FromSlash(rel)
	fi, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is a %s, not a regular file (links are never followed)", ErrPath, rel, kind(fi.Mode()))
	}
	f, err := root.Open(name)
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		return fmt.Errorf("%w: %s changed while being packed", ErrPath, rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxEntry+1))
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	if len(b) > MaxEntry {
		return fmt.Errorf("%w: %s is over %d bytes", ErrLimit, rel, MaxEntry)
	}
	files[rel] = b
	return nil
}
