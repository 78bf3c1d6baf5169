//go:build linux

package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// writeFile writes value to an existing interface file of dir, as one
// write(2): the kernel parses each write on its own.
func writeFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write %q to %s: %w", value, filepath.Join(dir, name), werr)
	}
	return cerr
}

// readKeyed parses a flat-keyed interface file ("key value" lines, as
// cgroup.events, cpu.stat, memory.events).
func readKeyed(dir, name string) (map[string]int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// readInt reads a single-value interface file (memory.peak, pids.peak).
func readInt(dir, name string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
}

// readWords reads a space-separated list (cgroup.controllers,
// cgroup.subtree_control).
func readWords(dir, name string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

// procs lists the processes in dir and every cgroup below it.
func procs(dir string) ([]int, error) {
	var out []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walk
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out, err
}

// populated reports whether dir or a cgroup below it holds a process, from
// cgroup.events (cgroup.procs where that file is missing). A removed cgroup
// is empty.
func populated(dir string) (bool, error) {
	ev, err := readKeyed(dir, "cgroup.events")
	switch {
	case err == nil:
		return ev["populated"] != 0, nil
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			return false, nil
		}
		pids, err := procs(dir)
		return len(pids) > 0, err
	default:
		return false, err
	}
}

// removeTree removes the cgroup dir and every cgroup below it, deepest
// first. The kernel refuses (EBUSY) while one holds a process. A missing
// dir is not an error.
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return rmdir(dir)
}

// rmdir removes one empty cgroup; a missing one is not an error.
func rmdir(dir string) error {
	if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	return nil
}
