//go:build unix

package wasmrun

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// cacheEntries maps each file under dir to its inode: wazero writes an
// entry only after compiling a module, by a rename that gives it a new
// inode.
func cacheEntries(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	got := map[string]uint64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		got[p] = fi.Sys().(*syscall.Stat_t).Ino
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
