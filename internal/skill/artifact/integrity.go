package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// integrityFile is integrity.json: every payload file but itself, in path
// order, with its SHA-256 and size.
type integrityFile struct {
	Version int             `json:"version"`
	Files   []integrityItem `json:"files"`
}

type integrityItem struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
}

func integrity(files map[string][]byte) ([]byte, error) {
	list := integrityFile{Version: 1, Files: []integrityItem{}}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if p == FileIntegrity || p == FileSignature {
			continue
		}
		sum := sha256.Sum256(files[p])
		list.Files = append(list.Files, integrityItem{Path: p, SHA256: hex.EncodeToString(sum[:]), Size: len(files[p])})
	}
	return json.MarshalIndent(list, "", "  ")
}

// checkIntegrity wants integrity.json to list exactly the other payload
// files, once each, with their digests and sizes, and to be the list
// Pack writes for them.
func checkIntegrity(files map[string][]byte) error {
	var list integrityFile
	if err := strictJSON(files[FileIntegrity], &list); err != nil || list.Version != 1 {
		return fmt.Errorf("%w: integrity.json is not a version 1 list (%v)", ErrIntegrity, err)
	}
	listed := map[string]bool{}
	for _, it := range list.Files {
		b, ok := files[it.Path]
		if !ok || it.Path == FileIntegrity || it.Path == FileSignature || listed[it.Path] {
			return fmt.Errorf("%w: it lists %q, which is not a payload file (or lists it twice)", ErrIntegrity, it.Path)
		}
		if sum := sha256.Sum256(b); it.SHA256 != hex.EncodeToString(sum[:]) || it.Size != len(b) {
			return fmt.Errorf("%w: %s has sha256 %x and %d bytes, not the listed %s and %d", ErrIntegrity, it.Path, sum, len(b), it.SHA256, it.Size)
		}
		listed[it.Path] = true
	}
	for p := range files {
		if p != FileIntegrity && p != FileSignature && !listed[p] {
			return fmt.Errorf("%w: %s is not listed", ErrIntegrity, p)
		}
	}
	return same(files, FileIntegrity, integrity)
}

// same wants files[name] to be exactly what gen makes of files: the
// generated files have one encoding, as the archive does.
func same(files map[string][]byte, name string, gen func(map[string][]byte) ([]byte, error)) error {
	want, err := gen(files)
	if err != nil {
		return err
	}
	if string(want) != string(files[name]) {
		return fmt.Errorf("%w: %s is not the one Pack generates for these files", ErrIntegrity, name)
	}
	return nil
}
