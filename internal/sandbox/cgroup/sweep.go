//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Orphan is a leaf Sweep found under a dead owner, killed and removed.
type Orphan struct {
	// Owner is the owner directory's name, x-<pid>-<starttime>.
	Owner string
	// Leaf is the leaf's name.
	Leaf string
	// PIDs are the processes the leaf held when Sweep found it, which it
	// killed; empty when the leaf was already empty.
	PIDs []int
}

// Sweep kills and removes the leaves of every owner directory in the
// parent whose process is dead (gone, a zombie, or another process that
// reused its pid), then removes those owner directories. Directories it
// did not name are left alone, as are live owners' leaves. It returns what
// it found, with the errors of the leaves it could not clear.
func (m *Manager) Sweep(ctx context.Context) ([]Orphan, error) {
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return nil, fmt.Errorf("cgroup: sweep: %w", err)
	}
	var found []Orphan
	var errs []error
	for _, e := range entries {
		o, ok := parseOwner(e.Name())
		if !e.IsDir() || !ok || o == m.self || o.alive() {
			continue
		}
		orphans, err := m.sweepOwner(ctx, e.Name())
		found = append(found, orphans...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
}

// sweepOwner clears the dead owner directory name.
func (m *Manager) sweepOwner(ctx context.Context, name string) ([]Orphan, error) {
	dir := filepath.Join(m.root, name)
	leaves, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cgroup: sweep %s: %w", dir, err)
	}
	var found []Orphan
	var errs []error
	for _, l := range leaves {
		if !l.IsDir() {
			continue
		}
		o, err := m.clearLeaf(ctx, filepath.Join(dir, l.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.Owner, o.Leaf = name, l.Name()
		found = append(found, o)
	}
	if len(errs) == 0 {
		if err := rmdir(dir); err != nil {
			errs = append(errs, fmt.Errorf("cgroup: sweep: %w", err))
		}
	}
	return found, errors.Join(errs...)
}

// clearLeaf kills what is in the leaf dir, waits for it to empty (at most
// killTimeout) and removes it.
func (m *Manager) clearLeaf(ctx context.Context, dir string) (Orphan, error) {
	pids, err := procs(dir)
	if err != nil {
		return Orphan{}, fmt.Errorf("cgroup: sweep %s: %w", dir, err)
	}
	if err := m.killDir(dir, m.kill); err != nil {
		return Orphan{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	if err := waitEmpty(wctx, dir); err != nil {
		return Orphan{}, err
	}
	if err := removeTree(dir); err != nil {
		return Orphan{}, fmt.Errorf("cgroup: sweep: %w", err)
	}
	return Orphan{PIDs: pids}, nil
}
