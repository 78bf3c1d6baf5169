package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

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
