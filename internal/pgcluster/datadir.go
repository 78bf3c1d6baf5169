//go:build unix

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dataDir is a PostgreSQL data directory, by absolute path.
type dataDir struct {
	path string
}

func (d dataDir) join(elem ...string) string {
	return filepath.Join(append([]string{d.path}, elem...)...)
}

// create makes the directory (mode 0700) and any missing parents (0755),
// giving the ones it created to the run-as user, and checks that the run-as
// user can reach it.
func (d dataDir) create(r runner) error {
	var missing []string // deepest first
	for p := d.path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
		}
		missing = append(missing, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	if len(missing) > 0 {
		// Refuse before creating anything the run-as user could not use.
		if err := d.checkTraversable(r, filepath.Dir(missing[len(missing)-1])); err != nil {
			return err
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		perm := os.FileMode(0o755)
		if p == d.path {
			perm = 0o700
		}
		if err := os.Mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("pgcluster: create data directory %s: %w", d.path, err)
		}
		if err := os.Chmod(p, perm); err != nil { // undo the umask
			return fmt.Errorf("pgcluster: create data directory %s: %w", d.path, err)
		}
		if err := r.chown(p); err != nil {
			return err
		}
	}
	fi, err := os.Stat(d.path)
	if err != nil {
		return fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("pgcluster: data directory %s is not a directory", d.path)
	}
	return d.checkTraversable(r, filepath.Dir(d.path))
}

// checkTraversable makes sure the run-as user can search dir and all its
// ancestors (also those of its symlink-resolved path), as postgres must
// reach the data directory inside. It matters when running as root: a
// root-owned 0700 parent (a t.TempDir, a home directory) is fine for us and
// fatal for the postgres user.
func (d dataDir) checkTraversable(r runner, dir string) error {
	if !r.switchUser {
		return nil
	}
	paths := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		paths = append(paths, real)
	}
	for _, p := range paths {
		for a := p; ; a = filepath.Dir(a) {
			fi, err := os.Stat(a)
			if err != nil {
				return fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
			}
			if !r.canSearch(fi) {
				return fmt.Errorf("pgcluster: directory %s (mode %v) is not traversable by run-as user %s, so it cannot reach data directory %s; "+
					"use a data directory elsewhere or grant search permission (chmod o+x)", a, fi.Mode().Perm(), r.name, d.path)
			}
			if a == filepath.Dir(a) {
				break
			}
		}
	}
	return nil
}

// canSearch reports whether the runner's user has search (x) permission on a
// directory, by the classic owner/group/other rule (ACLs are not consulted).
func (r runner) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == r.uid:
		return perm&0o100 != 0
	case int(st.Gid) == r.gid || r.inGroup(int(st.Gid)):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func (r runner) inGroup(gid int) bool {
	for _, g := range r.groups {
		if g == gid {
			return true
		}
	}
	return false
}

// lock takes an exclusive flock on the directory itself for the duration of
// Start, so that two concurrent Starts on one data directory cannot both
// run initdb or race to start a postmaster. It does not outlive Start: a
// running server is detected through postmaster.pid.
func (d dataDir) lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: lock data directory: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("pgcluster: lock data directory %s: %w", d.path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgcluster: data directory %s is locked by another Start: %w", d.path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// version returns the major version recorded in PG_VERSION, or "" for an
// empty directory that initdb can use. A non-empty directory without
// PG_VERSION, or one left half-made by an interrupted initdb, is an error.
func (d dataDir) version() (string, error) {
	b, err := os.ReadFile(d.join("PG_VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		entries, err := os.ReadDir(d.path)
		if err != nil {
			return "", fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
		}
		if len(entries) > 0 {
			return "", fmt.Errorf("pgcluster: data directory %s is not empty and is not a PostgreSQL data directory (no PG_VERSION); remove it or choose another", d.path)
		}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
	}
	if _, err := os.Stat(d.join("global", "pg_control")); err != nil {
		return "", fmt.Errorf("pgcluster: data directory %s is incomplete (no global/pg_control; was initdb interrupted?); remove it to start afresh: %w", d.path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// adopt makes an existing data directory usable by the run-as user: postgres
// requires the directory to be owned by the user it runs as, with mode 0700
// or 0750. A tree owned by someone else (e.g. the run-as user changed since
// the last run) is given to the run-as user recursively.
func (d dataDir) adopt(r runner) error {
	fi, err := os.Stat(d.path)
	if err != nil {
		return fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != r.uid {
		if !r.switchUser {
			owner := strconv.Itoa(int(st.Uid))
			if u, err := user.LookupId(owner); err == nil {
				owner = u.Username
			}
			return fmt.Errorf("pgcluster: data directory %s is owned by %s, not by %s who runs PostgreSQL", d.path, owner, r.name)
		}
		err := filepath.WalkDir(d.path, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return r.chown(p)
		})
		if err != nil {
			return fmt.Errorf("pgcluster: give data directory %s to %s: %w", d.path, r.name, err)
		}
	}
	if fi.Mode().Perm()&^0o750 != 0 {
		if err := os.Chmod(d.path, 0o700); err != nil {
			return fmt.Errorf("pgcluster: data directory %s: %w", d.path, err)
		}
	}
	return nil
}

// privateDir creates (if needed) a subdirectory of the data directory owned
// by the run-as user with mode 0700, for the log file or the Unix socket.
func (d dataDir) privateDir(r runner, name string) (string, error) {
	p := d.join(name)
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("pgcluster: create %s: %w", p, err)
	}
	if err := os.Chmod(p, 0o700); err != nil {
		return "", fmt.Errorf("pgcluster: %s: %w", p, err)
	}
	if err := r.chown(p); err != nil {
		return "", err
	}
	return p, nil
}
