package scaffold

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteWAT(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "hello")
	files, err := Write(dir, "acme.hello", "wat")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	want := []string{"Makefile", "modules/hello.wasm", "skill.toml", "src/hello.wat"}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "skill.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`skill_id = "acme.hello"`, `publisher = "acme"`, `module = "modules/hello.wasm"`} {
		if !bytes.Contains(manifest, []byte(s)) {
			t.Errorf("skill.toml lacks %s:\n%s", s, manifest)
		}
	}
	// The shipped module is what wat2wasm makes of the shipped text.
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (apt-get install wabt; scripts/ensure-test-deps.sh) is needed: %v", err)
	}
	built := filepath.Join(t.TempDir(), "built.wasm")
	if out, err := exec.Command(wat2wasm, filepath.Join(dir, "src", "hello.wat"), "-o", built).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(built)
	b, _ := os.ReadFile(filepath.Join(dir, "modules", "hello.wasm"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("templates/wat/skill.wasm is stale: rebuild it with wat2wasm templates/wat/src/skill.wat -o templates/wat/skill.wasm")
	}
}

func TestWriteGoBuilds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "greet")
	if _, err := Write(dir, "acme.greet", "go"); err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed: %v", err)
	}
	cmd := exec.Command(goTool, "build", "-o", "modules/greet.wasm", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Go skill does not build as written: %v\n%s", err, out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "modules", "greet.wasm")); err != nil || fi.Size() == 0 {
		t.Fatalf("no module: %v", err)
	}
}

func TestWriteRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, id, lang, says string }{
		{dir, "acme.hello", "wat", "not empty"},
		{filepath.Join(dir, "a"), "../evil", "wat", "not a skill id"},
		{filepath.Join(dir, "b"), "hello", "wat", "not a skill id"},
		{filepath.Join(dir, "c"), "acme.hello", "rust", "unknown language"},
	} {
		if _, err := Write(tc.dir, tc.id, tc.lang); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Write(%s, %s, %s): %v, want %q", tc.dir, tc.id, tc.lang, err, tc.says)
		}
	}
}
