package artifact

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.skill and testdata/golden/ from testdata/skill")

// TestGoldenArtifact: testdata/skill packs to testdata/golden.skill, byte
// for byte, and Open accepts it. When it fails after a Go upgrade with
// the generated files unchanged (testdata/golden/), compress/flate's
// output has changed: Open now refuses every artifact earlier builds
// packed, and publishers must pack them again.
func TestGoldenArtifact(t *testing.T) {
	t.Parallel()
	data := packedSkill(t)
	a, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	generatedNames := []string{FileSBOM, FileProvenance, FileIntegrity, FileSignature}
	if *update {
		if err := os.WriteFile("testdata/golden.skill", data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, name := range generatedNames {
			if err := os.WriteFile(filepath.Join("testdata/golden", name), a.Files[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range generatedNames {
		want, err := os.ReadFile(filepath.Join("testdata/golden", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Files[name], want) {
			t.Errorf("%s differs from testdata/golden/%s (go test -update rewrites it):\n%s", name, name, a.Files[name])
		}
	}
	golden, err := os.ReadFile("testdata/golden.skill")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, golden) {
		t.Error("testdata/skill no longer packs to testdata/golden.skill: if testdata/golden/ matches, compress/flate's output changed")
	}
	if err := openVerify(golden, testKey("publisher")); err != nil {
		t.Errorf("testdata/golden.skill: %v", err)
	}
}

// TestPackIsDeterministic: packing again, and packing a copy whose files
// have other times and modes, gives the same bytes.
func TestPackIsDeterministic(t *testing.T) {
	t.Parallel()
	data := packedSkill(t)
	again, err := Pack("testdata/skill", testKey("publisher"), testInfo)
	if err != nil || !bytes.Equal(data, again) {
		t.Fatalf("two packs differ (%v)", err)
	}
	dir := copySkill(t)
	when := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := os.Chtimes(p, when, when); err != nil {
			return err
		}
		return os.Chmod(p, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if copied, err := Pack(dir, testKey("publisher"), testInfo); err != nil || !bytes.Equal(data, copied) {
		t.Fatalf("a copy with other times and modes packs differently (%v)", err)
	}
}

// TestPackEncoding checks the archive's every entry: in path order,
// deflated, 0644, 1980-01-01, no extra fields, comments or data
// descriptors; no directory entries and no archive comment.
func TestPackEncoding(t *testing.T) {
	t.Parallel()
	data := packedSkill(t)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Comment != "" {
		t.Errorf("archive comment %q", zr.Comment)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		h := f.FileHeader
		if h.Method != zip.Store || f.Mode() != 0o644 || !h.Modified.Equal(time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)) ||
			len(h.Extra) != 0 || h.Comment != "" || h.Flags != 0 || strings.HasSuffix(h.Name, "/") {
			t.Errorf("%s: method %d, mode %v, modified %v, extra %x, comment %q, flags %#x", h.Name, h.Method, f.Mode(),
				h.Modified, h.Extra, h.Comment, h.Flags)
		}
	}
	if !slices.IsSorted(names) || len(names) != 8 {
		t.Errorf("entries %v", names)
	}
}

// TestPackNonASCIINames: a name that is not ASCII is marked UTF-8, as
// archive/zip's own writer marks it, and opens.
func TestPackNonASCIINames(t *testing.T) {
	t.Parallel()
	dir := copySkill(t)
	if err := os.WriteFile(filepath.Join(dir, "assets", "h\u00e9llo.txt"), []byte("h\u00e9llo"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := Pack(dir, testKey("publisher"), testInfo)
	if err != nil {
		t.Fatal(err)
	}
	if err := openVerify(data, testKey("publisher")); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if ascii := strings.IndexFunc(f.Name, func(r rune) bool { return r > 127 }) < 0; f.NonUTF8 || f.Flags&0x800 != 0 == ascii {
			t.Errorf("%s: flags %#x", f.Name, f.Flags)
		}
	}
}

// TestPackGenerated checks what the generated files say.
func TestPackGenerated(t *testing.T) {
	t.Parallel()
	files := packedFiles(t)
	var bom map[string]any
	if err := json.Unmarshal(files[FileSBOM], &bom); err != nil {
		t.Fatal(err)
	}
	component := bom["metadata"].(map[string]any)["component"].(map[string]any)
	if bom["bomFormat"] != "CycloneDX" || bom["specVersion"] != "1.5" || bom["version"] != 1.0 ||
		bom["serialNumber"] != nil || bom["metadata"].(map[string]any)["timestamp"] != nil ||
		component["type"] != "application" || component["name"] != "acme.hello" || component["version"] != "1.0.0" ||
		component["publisher"] != "acme" {
		t.Errorf("sbom.cdx.json:\n%s", files[FileSBOM])
	}
	var listed []string
	for _, c := range bom["components"].([]any) {
		c := c.(map[string]any)
		h := c["hashes"].([]any)[0].(map[string]any)
		if c["type"] != "file" || h["alg"] != "SHA-256" || h["content"] != sha256Hex(files[c["name"].(string)]) {
			t.Errorf("component %v", c)
		}
		listed = append(listed, c["name"].(string))
	}
	if want := []string{"assets/a/b/c/deep.txt", "assets/readme.txt", "modules/hello.wasm"}; !slices.Equal(listed, want) {
		t.Errorf("SBOM components %v, want %v", listed, want)
	}

	var st statement // strictly: no field but these, so no timestamps
	if err := strictJSON(files[FileProvenance], &st); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, s := range st.Subject {
		subjects = append(subjects, s.Name)
		if s.Digest["sha256"] != sha256Hex(files[s.Name]) {
			t.Errorf("subject %s: %v", s.Name, s.Digest)
		}
	}
	p := st.Predicate
	if st.Type != "https://in-toto.io/Statement/v1" || st.PredicateType != "https://slsa.dev/provenance/v1" ||
		p.BuildDefinition.BuildType != "https://execledger.dev/skill-package/v1" || p.RunDetails.Builder.ID != testInfo.Builder ||
		p.BuildDefinition.ExternalParameters["skill_id"] != "acme.hello" || p.BuildDefinition.ExternalParameters["version"] != "1.0.0" ||
		p.BuildDefinition.ExternalParameters["publisher"] != "acme" {
		t.Errorf("provenance.json:\n%s", files[FileProvenance])
	}
	if want := []string{"assets/a/b/c/deep.txt", "assets/readme.txt", "modules/hello.wasm", "skill.toml"}; !slices.Equal(subjects, want) {
		t.Errorf("provenance subjects %v, want %v", subjects, want)
	}

	var integ integrityFile
	if err := strictJSON(files[FileIntegrity], &integ); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, it := range integ.Files {
		paths = append(paths, it.Path)
		if it.SHA256 != sha256Hex(files[it.Path]) || it.Size != len(files[it.Path]) {
			t.Errorf("integrity %+v", it)
		}
	}
	if want := []string{"assets/a/b/c/deep.txt", "assets/readme.txt", "modules/hello.wasm", "provenance.json", "sbom.cdx.json",
		"skill.toml"}; integ.Version != 1 || !slices.Equal(paths, want) {
		t.Errorf("integrity list %v, want %v", paths, want)
	}
}

func TestPackRefuses(t *testing.T) {
	t.Parallel()
	write := func(rel, body string) func(dir string) error {
		return func(dir string) error {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			return os.WriteFile(p, []byte(body), 0o644)
		}
	}
	symlink := func(target, rel string) func(dir string) error {
		return func(dir string) error { return os.Symlink(target, filepath.Join(dir, filepath.FromSlash(rel))) }
	}
	remove := func(rel string) func(dir string) error {
		return func(dir string) error { return os.RemoveAll(filepath.Join(dir, filepath.FromSlash(rel))) }
	}
	many := func(dir string) error {
		for i := range MaxEntries {
			if err := write("assets/"+strings.Repeat("f", 1+i%9)+"/"+string(rune('a'+i/9)), "x")(dir); err != nil {
				return err
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		want  error
		msg   string // in the error, where want alone does not tell the check that refused
	}{
		{"a symlink in modules/", symlink("/etc/passwd", "modules/evil.wasm"), ErrPath, ""},
		{"a symlink to a module in modules/", symlink("hello.wasm", "modules/again.wasm"), ErrPath, ""},
		{"a symlink in assets/", symlink("../skill.toml", "assets/link"), ErrPath, ""},
		{"modules/ a symlink", func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "modules"), filepath.Join(dir, "real")); err != nil {
				return err
			}
			return symlink("real", "modules")(dir)
		}, ErrPath, ""},
		{"skill.toml a symlink", func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "skill.toml"), filepath.Join(dir, "real.toml")); err != nil {
				return err
			}
			return symlink("real.toml", "skill.toml")(dir)
		}, ErrPath, ""},
		{"sbom.cdx.json at the top", write(FileSBOM, "{}"), ErrLayout, ""},
		{"provenance.json at the top", write(FileProvenance, "{}"), ErrLayout, ""},
		{"integrity.json at the top", write(FileIntegrity, "{}"), ErrLayout, ""},
		{"signature.json at the top", write(FileSignature, "{}"), ErrLayout, ""},
		{"not a module in modules/", write("modules/run.sh", "x"), ErrLayout, ""},
		{"a directory in modules/", write("modules/sub/a.wasm", "x"), ErrLayout, ""},
		{"no skill.toml", remove("skill.toml"), ErrLayout, ""},
		{"no module", remove("modules/hello.wasm"), ErrLayout, ""},
		{"assets/ a file", func(dir string) error {
			return errors.Join(remove("assets")(dir), write("assets", "x")(dir))
		}, ErrPath, ""},
		{"an asset too deep", write("assets/a/b/c/d/e.txt", "x"), ErrPath, ""},
		{"a control character in a name", write("assets/a\x1bb", "x"), ErrPath, ""},
		{"a case duplicate", write("assets/README.txt", "x"), ErrPath, ""},
		{"an asset over 16 MiB", write("assets/big", strings.Repeat("x", MaxEntry+1)), ErrLimit, "is over"},
		{"more than 256 files", many, ErrLimit, "generated ones included"},
	} {
		dir := copySkill(t)
		if err := tc.setup(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Pack(dir, testKey("publisher"), testInfo); !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("%s: %v, want %v (%q)", tc.name, err, tc.want, tc.msg)
		}
	}
	if _, err := Pack("testdata/skill", ed25519.PrivateKey("short"), testInfo); err == nil {
		t.Error("a bad key: packed")
	}
	if _, err := Pack("testdata/skill", testKey("publisher"), Info{SkillID: "acme.hello"}); err == nil {
		t.Error("no version or publisher: packed")
	}
}

// TestPackLeavesOut: entries of the directory other than skill.toml,
// modules/ and assets/ are not packed, not even read: links among them
// are no matter.
func TestPackLeavesOut(t *testing.T) {
	t.Parallel()
	dir := copySkill(t)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := Pack(dir, testKey("publisher"), testInfo)
	if err != nil || !bytes.Equal(data, packedSkill(t)) {
		t.Fatalf("other entries changed the artifact (%v)", err)
	}
}

// copySkill copies testdata/skill into a temporary directory.
func copySkill(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("testdata/skill", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/skill", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := os.Create(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, src)
		return errors.Join(err, dst.Close())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
