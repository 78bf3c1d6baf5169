// Package testcache gives tests a directory they keep between runs, for
// content-addressed caches that are slow to fill: wazero's compiled code,
// which its compiler, instrumented by the race detector, takes a minute
// or more to make for a Go module on a loaded machine. wazero keys each
// entry by the module's bytes, its own version and the CPU's features and
// checks it when reading, so that a hit is what a compile would make; the
// first run on a machine still compiles everything.
package testcache

import (
	"os"
	"path/filepath"
)

// Wazero is the wazero compilation cache directory the tests share,
// execledger-test/wazero under the user's cache directory, made 0700
// (wasmrun refuses a cache directory others may write). ok is false when
// there is no user cache directory or the directory cannot be made: the
// caller then uses a temporary one, filled anew.
func Wazero() (dir string, ok bool) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", false
	}
	dir = filepath.Join(d, "execledger-test", "wazero")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false
	}
	return dir, true
}
