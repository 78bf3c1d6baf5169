package artifact

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/execledger/execledger/internal/attest"
)

// Artifact is an opened artifact: within the limits, laid out as a skill
// artifact, with the integrity list, SBOM and provenance Pack generates
// for its files, its archive the canonical encoding of its files. Its
// signature is as claimed: Verify checks it.
type Artifact struct {
	Digest        string            // "sha256:<hex>" of the archive bytes
	PayloadDigest [32]byte          // over every file but signature.json
	Files         map[string][]byte // every file, signature.json included
	Paths         []string          // the payload's paths, sorted
	Signature     Signature
}

// Signature is signature.json: who claims to have signed the payload.
// Publisher is the one the signed provenance names.
type Signature struct {
	Publisher string
	KeyID     string // attest.PublicKeyID(PublicKey)
	PublicKey ed25519.PublicKey
	Sig       []byte
}

// Manifest returns skill.toml, unparsed.
func (a *Artifact) Manifest() []byte { return a.Files[FileManifest] }

// Modules returns the modules' paths, sorted.
func (a *Artifact) Modules() []string {
	var out []string
	for _, p := range a.Paths {
		if isModule(p) {
			out = append(out, p)
		}
	}
	return out
}

// Verify checks that trusted is the key the artifact names and that it
// signed the payload.
func (a *Artifact) Verify(trusted ed25519.PublicKey) error {
	if !trusted.Equal(a.Signature.PublicKey) {
		return fmt.Errorf("%w: signed by key %s, not the trusted key %s", ErrSignature, a.Signature.KeyID, attest.PublicKeyID(trusted))
	}
	if !VerifySignature(trusted, a.PayloadDigest, a.Signature.Sig) {
		return fmt.Errorf("%w under key %s", ErrSignature, a.Signature.KeyID)
	}
	return nil
}

// Open reads an untrusted archive. It enforces the limits before
// decompressing (from the central directory) and while decompressing
// (never past a header's declared size), checks every path, the layout,
// the integrity list, the SBOM and provenance, the form of signature.json
// and, last, that the archive is byte for byte the canonical encoding of
// its files. It does not decide trust: Verify does, with a key the caller
// trusts.
func Open(data []byte) (*Artifact, error) {
	if len(data) > MaxArchive {
		return nil, fmt.Errorf("%w: the archive is %d bytes; the limit is %d", ErrLimit, len(data), MaxArchive)
	}
	if err := countEntries(data); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // checkPath says which path, and why
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	files, err := readFiles(data, zr.File)
	if err != nil {
		return nil, err
	}
	if err := checkLayout(files); err != nil {
		return nil, err
	}
	if err := checkIntegrity(files); err != nil {
		return nil, err
	}
	info, err := packedInfo(files)
	if err != nil {
		return nil, err
	}
	if err := same(files, FileSBOM, func(files map[string][]byte) ([]byte, error) { return sbom(files, info) }); err != nil {
		return nil, err
	}
	d := PayloadDigest(files)
	sig, err := parseSignature(files[FileSignature], d)
	if err != nil {
		return nil, err
	}
	if sig.Publisher != info.Publisher {
		return nil, fmt.Errorf("%w: it names publisher %q; the signed provenance names %q", ErrSignatureFormat, sig.Publisher, info.Publisher)
	}
	canon, err := encode(files)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, data) {
		return nil, fmt.Errorf("%w: the archive is not the canonical encoding of its files: changed after packing, or not made by execledger skill package", ErrFormat)
	}
	sum := sha256.Sum256(data)
	paths := slices.Sorted(maps.Keys(files))
	return &Artifact{Digest: "sha256:" + hex.EncodeToString(sum[:]), PayloadDigest: d, Files: files,
		Paths: slices.DeleteFunc(paths, func(p string) bool { return p == FileSignature }), Signature: sig}, nil
}

// checkLayout wants the manifest, the generated files, a module, and
// nothing else but assets.
func checkLayout(files map[string][]byte) error {
	for _, need := range []string{FileManifest, FileSBOM, FileProvenance, FileIntegrity, FileSignature} {
		if _, ok := files[need]; !ok {
			return fmt.Errorf("%w: no %s", ErrLayout, need)
		}
	}
	modules := 0
	for p := range files {
		switch {
		case p == FileManifest || generated[p] || isAsset(p):
		case isModule(p):
			modules++
		default:
			return fmt.Errorf("%w: %s is not part of a skill artifact (skill.toml, modules/*.wasm, assets/...)", ErrLayout, p)
		}
	}
	if modules == 0 {
		return fmt.Errorf("%w: no modules/*.wasm", ErrLayout)
	}
	return nil
}
