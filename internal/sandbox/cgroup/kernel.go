//go:build linux

package cgroup

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// minKernel is the first kernel whose clone3 takes CLONE_INTO_CGROUP, which
// Group.FD is for: without it no process could start inside a leaf.
var minKernel = [2]int{5, 7}

// kernelRelease is uname's release ("6.18.44-fc-v595").
func kernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

// checkKernel fails, wrapping ErrUnavailable, on a kernel older than
// minKernel.
func checkKernel(release string) error {
	major, rest, _ := strings.Cut(release, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i] // "15rc1", "10-amd64"
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%w: cannot read kernel release %q", ErrUnavailable, release)
	}
	if ma < minKernel[0] || ma == minKernel[0] && mi < minKernel[1] {
		return fmt.Errorf("%w: kernel %s cannot start a process inside a cgroup (CLONE_INTO_CGROUP needs %d.%d)",
			ErrUnavailable, release, minKernel[0], minKernel[1])
	}
	return nil
}
