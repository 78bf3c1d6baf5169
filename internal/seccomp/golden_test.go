package seccomp

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// compareGolden compares got with testdata/name, or rewrites it with -update.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (review, then go test -update rewrites it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestDisassemblyGolden pins the programs so that any change to them shows
// up in review as a diff of testdata/.
func TestDisassemblyGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		goarch string
		opts   Options
	}{
		{"filter_amd64.golden", "amd64", Options{}},
		{"filter_arm64.golden", "arm64", Options{}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			f, err := BuildFor(c.goarch, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, c.golden, []byte(f.Disassemble()))
		})
	}
}
