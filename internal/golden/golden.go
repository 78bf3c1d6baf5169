// Package golden compares test output with files under testdata/, and
// rewrites them when the test binary runs with -update.
//
// It registers the -update flag, so a test package that imports it must
// not define its own.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Updating reports whether the run rewrites golden files.
func Updating() bool { return *update }

// Compare checks got against testdata/name, or writes it there with -update.
func Compare(t testing.TB, name string, got []byte) {
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
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (review, then go test -update rewrites it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}
