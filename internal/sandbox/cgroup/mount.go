//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mount is one cgroup2 mount from mountinfo.
type mount struct {
	// dir is the mount point.
	dir string
	// root is the cgroup shown at the mount point, "/" unless the mount
	// is of a subtree (a bind mount, a cgroup namespace's view).
	root     string
	readOnly bool
}

// parseMountInfo returns the cgroup2 mounts of a /proc/<pid>/mountinfo
// text, in its order. A line is "id parent major:minor root mountpoint
// options [optional fields] - fstype source superoptions"; paths have
// space, tab, newline and backslash octal-escaped.
func parseMountInfo(data []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		ro := false
		for _, o := range strings.Split(fields[5], ",") {
			ro = ro || o == "ro"
		}
		out = append(out, mount{dir: unescapeMountPath(fields[4]), root: unescapeMountPath(fields[3]), readOnly: ro})
	}
	return out
}

// unescapeMountPath undoes mountinfo's \ooo escapes.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup returns the cgroup v2 path of a /proc/<pid>/cgroup text:
// the path of its "0::" line.
func parseProcCgroup(data []byte) (string, bool) {
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, true
		}
	}
	return "", false
}

// locate finds the directory of our own cgroup in a writable cgroup2
// mount. Its errors wrap ErrUnavailable.
func locate(mountInfo, procCgroup string) (mnt mount, self string, err error) {
	data, err := os.ReadFile(procCgroup)
	if err != nil {
		return mount{}, "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	cg, ok := parseProcCgroup(data)
	if !ok {
		return mount{}, "", fmt.Errorf("%w: %s has no cgroup v2 (0::) entry", ErrUnavailable, procCgroup)
	}
	if strings.HasSuffix(cg, " (deleted)") {
		return mount{}, "", fmt.Errorf("%w: our cgroup %s was removed", ErrUnavailable, cg)
	}
	data, err = os.ReadFile(mountInfo)
	if err != nil {
		return mount{}, "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	mounts := parseMountInfo(data)
	if len(mounts) == 0 {
		return mount{}, "", fmt.Errorf("%w: no cgroup2 file system is mounted (%s)", ErrUnavailable, mountInfo)
	}
	var why []string
	for _, m := range mounts {
		rel, ok := within(cg, m.root)
		switch {
		case m.readOnly:
			why = append(why, m.dir+" is mounted read-only")
		case !ok:
			why = append(why, fmt.Sprintf("%s shows %s, which does not hold our cgroup %s", m.dir, m.root, cg))
		case !isCgroup2(m.dir):
			why = append(why, m.dir+" is not a cgroup2 file system")
		default:
			return m, path.Join(m.dir, rel), nil
		}
	}
	return mount{}, "", fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(why, "; "))
}

// within returns p relative to root ("/" for root itself) when p is root
// or below it.
func within(p, root string) (string, bool) {
	p, root = path.Clean(p), path.Clean(root)
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// isCgroup2 reports whether dir is on a cgroup2 file system.
func isCgroup2(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}
