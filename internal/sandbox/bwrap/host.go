//go:build linux

package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Host is what the sandboxes of one executor share, found and written once
// by NewHost instead of on every call: bwrap's path, the host's layout, and
// a skeleton directory whose etc and dev become the sandbox's /etc and
// /dev. It is safe for concurrent use.
//
// A Plan with a Host builds its argv without probing the host, and its
// sandbox has, besides the mounts every plan has:
//
//   - /etc: the skeleton's etc bound read-only, holding the generated
//     passwd, group and hosts and an empty file for each allowlisted host
//     file that existed when NewHost ran, on which that host file is bound
//     read-only on every call (so it stays current; but which files are
//     bound is fixed by NewHost: one added later is not, one removed
//     makes bwrap fail until a new Host is made);
//   - /dev: the skeleton's dev bound read-only, with the host's null, zero,
//     full, random and urandom bound on its empty files and the symlinks
//     fd, stdin, stdout and stderr into /proc/self/fd and shm to /tmp.
//     Nothing else: no tty, no devpts, and /dev itself is read-only.
//
// A Plan without a Host probes the host on every call, generates passwd,
// group and hosts into memfds, and gets bwrap's --dev (a writable tmpfs
// with tty and a devpts instance besides those devices).
type Host struct {
	bwrap  string
	layout hostLayout
	// skel is the skeleton directory; "" in the Host a Plan without one
	// builds from a probe.
	skel     string
	uid, gid uint32
}

// NewHost finds bwrap, probes the host and writes, or reuses, the skeleton
// directory for sandboxes running as uid and gid (0 means Nobody) under
// base. base is created 0711 if missing and must belong to the calling
// user, writable by no one else: the skeletons in it are what every
// sandbox sees as /etc and /dev. bwrap must be able to reach them: when
// Plan.HostUID is set, every directory above base must be searchable by
// that uid. Skeletons are named after their content, so processes and
// Hosts that need the same one share it; none is ever removed.
func NewHost(base string, uid, gid uint32) (*Host, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	layout, err := probeHost()
	if err != nil {
		return nil, err
	}
	h := &Host{bwrap: path, layout: layout, uid: uid, gid: gid}
	if h.uid == 0 {
		h.uid = Nobody
	}
	if h.gid == 0 {
		h.gid = Nobody
	}
	if h.skel, err = writeSkeleton(base, h.entries()); err != nil {
		return nil, fmt.Errorf("sandbox skeleton: %w", err)
	}
	return h, nil
}

// Dir is the skeleton directory.
func (h *Host) Dir() string { return h.skel }

// SearchableBy checks, by their mode bits, that uid with gid as its only
// group may search every directory down to the skeleton's files: bwrap,
// run as Plan.HostUID, must reach them. Run it once after NewHost.
func (h *Host) SearchableBy(uid, gid uint32) error {
	for d := h.skel + "/etc"; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", d)
		}
		perm := fi.Mode().Perm()
		switch {
		case st.Uid == uid:
			perm &= 0o100
		case st.Gid == gid:
			perm &= 0o010
		default:
			perm &= 0o001
		}
		if perm == 0 {
			return fmt.Errorf("uid %d cannot reach the sandbox skeleton %s: %s (mode %v, owner %d:%d) is not searchable for it", uid, h.skel, d, fi.Mode().Perm(), st.Uid, st.Gid)
		}
		if d == "/" {
			return nil
		}
	}
}

// check makes sure the skeleton is still there, rewriting it if something
// (a cleaner of the temporary directory, say) removed it: one lstat.
func (h *Host) check() error {
	if h.skel == "" {
		return nil
	}
	if _, err := os.Lstat(h.skel + "/" + skeletonMarker); err == nil {
		return nil
	}
	if _, err := writeSkeleton(filepath.Dir(h.skel), h.entries()); err != nil {
		return fmt.Errorf("sandbox skeleton: %w", err)
	}
	return nil
}

// hostLayout is what Args needs to know about the host's root: how the
// top-level library and binary directories exist, and which allowlisted
// /etc files are present.
type hostLayout struct {
	// roots are /bin, /sbin, /lib and the like, in argv order.
	roots []rootDir
	// etc are the allowlisted /etc files that exist.
	etc []string
}

// rootDir is one top-level directory: a symlink into /usr (merged /usr,
// as on Debian 12), recreated with --symlink, or a real directory bound
// read-only.
type rootDir struct {
	path    string
	symlink string // target when the host has a symlink into usr/
}

// rootDirs are the top-level directories besides /usr that programs expect.
var rootDirs = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcAllowlist are the host /etc files bound read-only when present: the
// dynamic loader's cache, the time zone and the CA bundle. passwd, group
// and hosts are generated instead, so host accounts stay hidden.
var etcAllowlist = []string{"/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/certs/ca-certificates.crt"}

// probeHost inspects the running host.
func probeHost() (hostLayout, error) {
	var h hostLayout
	for _, p := range rootDirs {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return hostLayout{}, fmt.Errorf("inspect host %s: %w", p, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return hostLayout{}, fmt.Errorf("inspect host %s: %w", p, err)
			}
			if strings.HasPrefix(target, "/") {
				target = target[1:]
			}
			if strings.HasPrefix(target, "usr/") && !strings.Contains(target, "..") {
				h.roots = append(h.roots, rootDir{path: p, symlink: target})
				continue
			}
			h.roots = append(h.roots, rootDir{path: p})
		case fi.IsDir():
			h.roots = append(h.roots, rootDir{path: p})
		}
	}
	for _, p := range etcAllowlist {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			h.etc = append(h.etc, p)
		}
	}
	return h, nil
}
