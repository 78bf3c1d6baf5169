package procinput

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// workspace scopes paths to a canonical root.
type workspace struct {
	root string
}

// openWorkspace canonicalises root (symlinks resolved); it must be an
// existing directory other than "/".
func openWorkspace(root string) (*workspace, error) {
	if strings.IndexByte(root, 0) >= 0 {
		return nil, scopeDenied(ReasonRootInvalid, "workspace root contains a NUL byte", nil)
	}
	canon, err := filepath.EvalSymlinks(filepath.Clean(root))
	if err != nil {
		return nil, scopeDenied(ReasonRootInvalid, fmt.Sprintf("workspace root %q cannot be resolved", root), err)
	}
	fi, err := os.Stat(canon)
	if err != nil {
		return nil, scopeDenied(ReasonRootInvalid, fmt.Sprintf("workspace root %q cannot be read", root), err)
	}
	if !fi.IsDir() {
		return nil, scopeDenied(ReasonRootInvalid, fmt.Sprintf("workspace root %q is not a directory", root), nil)
	}
	if canon == "/" {
		return nil, scopeDenied(ReasonRootInvalid, "workspace root is the file system root, which scopes nothing", nil)
	}
	return &workspace{root: canon}, nil
}

// within reports whether the clean absolute path p is root or below it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// dir resolves the working directory: cwd (empty means the root),
// relative to the root, must exist, be a directory and be inside.
func (w *workspace) dir(cwd string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	p, err := w.resolve(w.root, cwd, true)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return "", scopeDenied(ReasonCwdNotDirectory, fmt.Sprintf("cwd %s is not a directory in the workspace", short(cwd)), err)
	}
	return p, nil
}

// resolve returns the path raw names (relative to base) after proving it
// stays in the workspace: NUL and any ".." component are refused before
// the file system is touched; an existing path is canonicalised (every
// symlink followed) and must be inside; for a path that does not exist,
// the nearest existing ancestor is. An existing path is returned
// canonical; a missing one is its canonical ancestor joined with the
// missing components (which, not existing, cannot be symlinks).
//
// Unlike Palyra, a dangling symlink is refused: it would let a process
// create a file wherever it points.
func (w *workspace) resolve(base, raw string, mustExist bool) (string, error) {
	if strings.IndexByte(raw, 0) >= 0 {
		return "", scopeDenied(ReasonNULByte, "path contains a NUL byte", nil)
	}
	if hasDotDot(raw) {
		return "", scopeDenied(ReasonPathTraversal, fmt.Sprintf("path %s has a '..' component", short(raw)), nil)
	}
	cand := raw
	if !filepath.IsAbs(raw) {
		cand = filepath.Join(base, raw)
	}
	cand = filepath.Clean(cand)
	existing := nearestExisting(cand)
	if mustExist && existing != cand {
		return "", scopeDenied(ReasonCwdMissing, fmt.Sprintf("path %s does not exist", short(raw)), nil)
	}
	canon, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", scopeDenied(ReasonPathUnresolvable, fmt.Sprintf("path %s cannot be resolved (dangling or looping symlink?)", short(raw)), err)
	}
	if !within(w.root, canon) {
		return "", scopeDenied(ReasonPathEscape, fmt.Sprintf("path %s resolves to %s, outside the workspace %q", short(raw), short(canon), w.root), nil)
	}
	return filepath.Join(canon, strings.TrimPrefix(cand, existing)), nil
}

// hasDotDot reports a ".." component in a slash-separated path.
func hasDotDot(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// nearestExisting returns the longest prefix of the clean absolute path p
// that exists, without following a final symlink. Any lstat error (not
// found, not a directory, name too long, permission, loop) moves up: the
// ancestor is what gets checked.
func nearestExisting(p string) string {
	for {
		if _, err := os.Lstat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}
