//go:build linux

package processrun

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// removeAt removes name, in the directory open as dirfd, and everything
// below it, without following a symbolic link anywhere: every step is an
// openat or unlinkat relative to a descriptor of the directory above, and
// directories are opened with O_NOFOLLOW, so a link planted in the tree,
// or a directory swapped for one while the removal runs, is removed as a
// link and what it points to is never touched. A directory that the
// daemon may not read or search (mode 0000 of a non-root daemon's own
// file) is given mode 0700 through its O_PATH descriptor first. Entries
// that vanish meanwhile are not errors.
func removeAt(dirfd int, name string) error {
	for range 8 {
		err := unix.Unlinkat(dirfd, name, 0)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EISDIR), errors.Is(err, unix.EPERM):
			// A directory (Linux says EISDIR; POSIX allows EPERM).
		default:
			return fmt.Errorf("unlink %s: %w", name, err)
		}
		err = removeDirAt(dirfd, name)
		if !errors.Is(err, errNotDir) {
			return err
		}
		// It stopped being a directory (swapped for a link or a file)
		// between the unlink and the open: unlink whatever it is now.
	}
	return fmt.Errorf("remove %s: it keeps changing between a file and a directory", name)
}

var errNotDir = errors.New("not a directory")

// removeDirAt empties and removes the directory name of dirfd; errNotDir
// if name is not (or no longer) a directory.
func removeDirAt(dirfd int, name string) error {
	fd, err := openDirAt(dirfd, name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	// Reading forward while removing may miss entries: read again from
	// the start until the directory is empty.
	for range 8 {
		if _, err := f.Seek(0, 0); err != nil {
			return fmt.Errorf("rewind %s: %w", name, err)
		}
		names, err := f.Readdirnames(-1)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if len(names) == 0 {
			err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
			if err == nil || errors.Is(err, unix.ENOENT) {
				return nil
			}
			if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("rmdir %s: %w", name, err)
			}
			continue
		}
		for _, n := range names {
			if err := removeAt(fd, n); err != nil {
				return fmt.Errorf("%s/%w", name, err)
			}
		}
	}
	return fmt.Errorf("rmdir %s: entries keep appearing", name)
}

// openDirAt opens the directory name of dirfd for reading, never through
// a symbolic link; errNotDir if it is not a directory. A directory the
// daemon lacks permission on gets mode 0700 first.
func openDirAt(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return -1, errNotDir
	}
	if !errors.Is(err, unix.EACCES) {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	// O_PATH needs no permission on the directory itself; chmod through
	// /proc/self/fd reaches the directory the descriptor holds, never a
	// link (O_NOFOLLOW), and then "." opens it.
	pfd, perr := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if perr != nil {
		if errors.Is(perr, unix.ENOTDIR) || errors.Is(perr, unix.ELOOP) {
			return -1, errNotDir
		}
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(pfd)
	if cerr := unix.Chmod("/proc/self/fd/"+strconv.Itoa(pfd), 0o700); cerr != nil {
		return -1, fmt.Errorf("open %s: %w (and chmod: %v)", name, err, cerr)
	}
	fd, err = unix.Openat(pfd, ".", flags, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	return fd, nil
}
