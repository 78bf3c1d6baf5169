//go:build linux

package bwrap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A skeleton is the directory a Host's sandboxes see as /etc and /dev
// (Host has the layout). It is written once into a temporary directory and
// renamed into place, so it is complete or absent; it is named after a
// hash of its content and never changed afterwards, so every process that
// needs the same skeleton can share it.

// skeletonMarker is the file Host.check looks for on every call.
const skeletonMarker = "etc/passwd"

// skeletonVersion changes when the way a skeleton is written does.
const skeletonVersion = "1"

// devNodes are the host devices bound into /dev. Not tty: with
// --new-session and no devpts the sandbox can have no controlling
// terminal, so opening it could only fail.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// devLinks are /dev's symlinks, name to target. shm points at the
// sandbox's /tmp, a tmpfs, where POSIX shared memory and semaphores
// (shm_open, sem_open) then live.
var devLinks = [][2]string{
	{"fd", "/proc/self/fd"},
	{"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"},
	{"stderr", "/proc/self/fd/2"},
	{"shm", "/tmp"},
}

// skelEntry is one file of a skeleton.
type skelEntry struct {
	// path is below the skeleton, e.g. "etc/passwd".
	path string
	// target is a symlink's target; "" for a regular file.
	target string
	// data is a regular file's content; "" for an empty mount point.
	data string
}

// generatedEtc are the files written into /etc instead of the host's.
func generatedEtc(uid, gid uint32) [][2]string {
	return [][2]string{
		{"/etc/passwd", fmt.Sprintf("sandbox:x:%d:%d:sandbox:%s:/usr/sbin/nologin\n", uid, gid, WorkspaceDir)},
		{"/etc/group", fmt.Sprintf("sandbox:x:%d:\n", gid)},
		{"/etc/hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n"},
	}
}

// entries are the files of h's skeleton.
func (h *Host) entries() []skelEntry {
	var es []skelEntry
	for _, g := range generatedEtc(h.uid, h.gid) {
		es = append(es, skelEntry{path: g[0][1:], data: g[1]})
	}
	for _, p := range h.layout.etc {
		es = append(es, skelEntry{path: p[1:]})
	}
	for _, n := range devNodes {
		es = append(es, skelEntry{path: "dev/" + n})
	}
	for _, l := range devLinks {
		es = append(es, skelEntry{path: "dev/" + l[0], target: l[1]})
	}
	return es
}

// skeletonName is the skeleton's directory name: a hash of its entries.
func skeletonName(entries []skelEntry) string {
	sum := sha256.New()
	fmt.Fprintf(sum, "skeleton %s\n", skeletonVersion)
	for _, e := range entries {
		fmt.Fprintf(sum, "%q %q %q\n", e.path, e.target, e.data)
	}
	return "skel-" + hex.EncodeToString(sum.Sum(nil))[:24]
}

// writeSkeleton returns the skeleton of entries under base, writing it
// unless a complete one is there.
func writeSkeleton(base string, entries []skelEntry) (string, error) {
	if err := privateDir(base); err != nil {
		return "", err
	}
	dir := filepath.Join(base, skeletonName(entries))
	if complete(dir, entries) == nil {
		return dir, nil
	}
	return dir, rewriteSkeleton(dir, entries)
}

// rewriteSkeleton writes entries into a temporary directory next to dir
// and renames it to dir, replacing an incomplete dir. Another process
// writing the same skeleton at the same time may win: its dir is as good.
func rewriteSkeleton(dir string, entries []skelEntry) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // nothing left after the rename
	if err := fill(tmp, entries); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err == nil {
		return nil
	}
	if complete(dir, entries) == nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// fill writes entries below dir: directories 0755, files 0444, whatever
// the umask.
func fill(dir string, entries []skelEntry) error {
	for _, d := range skeletonDirs(entries) {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.path)
		if e.target != "" {
			if err := os.Symlink(e.target, p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(e.data), 0o444); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o444); err != nil {
			return err
		}
	}
	for _, d := range append(skeletonDirs(entries), ".") {
		if err := os.Chmod(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// skeletonDirs are the directories entries need, parents first.
func skeletonDirs(entries []skelEntry) []string {
	var dirs []string
	for _, e := range entries {
		for d := filepath.Dir(e.path); d != "."; d = filepath.Dir(d) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	return dirs
}

// complete checks that dir holds exactly entries and their directories,
// each of the right type (and symlinks' targets), belonging to this
// process's user and writable by no one else.
func complete(dir string, entries []skelEntry) error {
	want := make(map[string]skelEntry, len(entries))
	for _, e := range entries {
		want[e.path] = e
	}
	for _, d := range skeletonDirs(entries) {
		want[d] = skelEntry{path: d + "/"}
	}
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if err := ownedPrivately(p, fi); err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		e, ok := want[rel]
		switch {
		case !ok:
			return fmt.Errorf("%s: not part of the skeleton", p)
		case strings.HasSuffix(e.path, "/") != d.IsDir():
			return fmt.Errorf("%s: wrong type", p)
		case e.target != "":
			if t, err := os.Readlink(p); err != nil || t != e.target {
				return fmt.Errorf("%s: not a symlink to %s", p, e.target)
			}
		case !d.IsDir() && (!fi.Mode().IsRegular() || fi.Size() != int64(len(e.data))):
			return fmt.Errorf("%s: not the skeleton's file", p)
		}
		seen++
		return nil
	})
	if err == nil && seen != len(want) {
		err = fmt.Errorf("%s: incomplete", dir)
	}
	return err
}

// ownedPrivately checks that fi belongs to this process's effective user
// and, unless a symlink, is writable by no one else.
func ownedPrivately(p string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("%s: no owner", p)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to this process", p, st.Uid)
	case fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v)", p, fi.Mode().Perm())
	}
	return nil
}

// privateDir creates base 0711 if missing and checks that it is a
// directory of this process's user that no one else may write to and
// everyone may search, fixing its mode if needed.
func privateDir(base string) error {
	if !filepath.IsAbs(base) {
		return fmt.Errorf("skeleton directory %q is not absolute", base)
	}
	if err := os.MkdirAll(base, 0o711); err != nil {
		return err
	}
	fi, err := os.Lstat(base)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", base)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s does not belong to this process's user", base)
	}
	// bwrap, as Plan.HostUID, must be able to search it.
	if perm := fi.Mode().Perm(); perm&0o022 != 0 || perm&0o011 != 0o011 {
		return os.Chmod(base, 0o711)
	}
	return nil
}
