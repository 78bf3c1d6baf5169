//go:build !unix

package wasmrun

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// cacheEntries maps each file under dir to its size and modification
// time: without inodes, a rewritten entry shows as another time.
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
		got[p] = uint64(fi.ModTime().UnixNano()) ^ uint64(fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
