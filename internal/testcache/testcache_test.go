package testcache

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWazero: the directory is under the user's cache directory, exists,
// is writable by its owner alone, and is the same for every caller;
// without a user cache directory there is none.
func TestWazero(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	dir, ok := Wazero()
	if !ok || dir != filepath.Join(home, "cache", "execledger-test", "wazero") {
		t.Fatalf("Wazero() = %q, %v", dir, ok)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("%s: %v, %v", dir, fi.Mode(), err)
	}
	if again, ok := Wazero(); !ok || again != dir {
		t.Errorf("a second call: %q, %v", again, ok)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if dir, ok := Wazero(); ok {
		t.Errorf("without a user cache directory: %q", dir)
	}
}
