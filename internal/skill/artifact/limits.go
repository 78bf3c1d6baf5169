package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of an artifact. Open refuses an archive over any of them and
// Pack refuses to make one.
const (
	MaxArchive = 64 << 20 // bytes of the archive
	MaxEntry   = 16 << 20 // bytes of one file, uncompressed
	MaxEntries = 256      // files in the archive, the generated ones included
	MaxTotal   = 64 << 20 // bytes of all files, uncompressed
	MaxRatio   = 100      // uncompressed:compressed, for a file over RatioFloor
	RatioFloor = 1 << 20  // files of at most this many bytes may compress better than MaxRatio
	MaxPath    = 256      // bytes of a path
	MaxDepth   = 4        // levels of a path below assets/: assets/a/b/c/file
)

// Errors Open and Pack wrap; errors.Is tells them apart.
var (
	ErrLimit           = errors.New("artifact: over a limit")
	ErrPath            = errors.New("artifact: a forbidden path or file type")
	ErrFormat          = errors.New("artifact: not a well-formed, canonical artifact ZIP")
	ErrLayout          = errors.New("artifact: not a skill artifact's layout")
	ErrIntegrity       = errors.New("artifact: the integrity list, SBOM or provenance does not match the files")
	ErrSignatureFormat = errors.New("artifact: malformed signature.json")
	ErrSignature       = errors.New("artifact: the signature does not verify")
)

// Names of the files of an artifact.
const (
	FileManifest   = "skill.toml"
	FileSBOM       = "sbom.cdx.json"
	FileProvenance = "provenance.json"
	FileIntegrity  = "integrity.json"
	FileSignature  = "signature.json"
)

// generated are the files Pack writes itself; a skill's directory may not
// hold them.
var generated = map[string]bool{FileSBOM: true, FileProvenance: true, FileIntegrity: true, FileSignature: true}

func isModule(p string) bool {
	name, ok := strings.CutPrefix(p, "modules/")
	return ok && !strings.Contains(name, "/") && strings.HasSuffix(name, ".wasm") && len(name) > len(".wasm")
}

func isAsset(p string) bool { return strings.HasPrefix(p, "assets/") }

// checkPath refuses a name that is not a plain, relative, slash-separated
// UTF-8 path of at most MaxPath bytes and MaxDepth+1 segments.
func checkPath(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: %q: %s", ErrPath, name, why) }
	switch {
	case name == "" || len(name) > MaxPath:
		return bad(fmt.Sprintf("empty or over %d bytes", MaxPath))
	case !utf8.ValidString(name):
		return bad("not UTF-8")
	case strings.HasPrefix(name, "/"):
		return bad("absolute")
	case strings.HasSuffix(name, "/"):
		return bad("a directory entry")
	case strings.ContainsRune(name, '\\'):
		return bad("a backslash")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return bad("a control character")
	case strings.Count(name, "/") > MaxDepth:
		return bad(fmt.Sprintf("more than %d segments", MaxDepth+1))
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("an empty, . or .. segment")
		}
	}
	return nil
}

// checkNames checks every path and refuses more than MaxEntries of them
// and two that are equal under Unicode case folding (strings.EqualFold):
// they would be one file on a case-insensitive file system.
func checkNames(names []string) error {
	if len(names) > MaxEntries {
		return fmt.Errorf("%w: %d files; the limit is %d", ErrLimit, len(names), MaxEntries)
	}
	folded := make(map[string]string, len(names))
	for _, n := range names {
		if err := checkPath(n); err != nil {
			return err
		}
		k := foldKey(n)
		if prev, dup := folded[k]; dup {
			return fmt.Errorf("%w: %q and %q are the same name", ErrPath, prev, n)
		}
		folded[k] = n
	}
	return nil
}

// foldKey maps every rune of s to the least rune of its case-folding
// orbit, so that foldKey(a) == foldKey(b) exactly when strings.EqualFold(a, b).
func foldKey(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

// checkSize refuses a file over MaxEntry, or over RatioFloor and
// compressed more than MaxRatio:1 (a zip bomb's signature).
func checkSize(name string, size, compressed uint64) error {
	switch {
	case size > MaxEntry:
		return fmt.Errorf("%w: %s is %d bytes; the limit is %d", ErrLimit, name, size, MaxEntry)
	case size > RatioFloor && compressed < size && size > MaxRatio*compressed: // compressed < MaxEntry: no overflow
		return fmt.Errorf("%w: %s compresses %d bytes into %d, over %d:1 (a zip bomb?)", ErrLimit, name, size, compressed, MaxRatio)
	}
	return nil
}

// kind names a file mode's type, for errors.
func kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
