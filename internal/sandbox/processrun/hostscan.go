//go:build linux

package processrun

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// hostScan is what the host's live processes hold, read from /proc once
// per sweep: the workspace sweeper deletes nothing a process holds.
type hostScan struct {
	// ids are the uids (real, effective, saved, filesystem) and gids of
	// every process, zombies included.
	ids map[uint32]bool
	// dirs are the directories (device and inode) on the way from each
	// process's working directory and root directory up to the top of its
	// mount namespace: a workspace among them is some process's working
	// directory or an ancestor of it, or its root.
	dirs map[fileID]bool
}

type fileID struct{ dev, ino uint64 }

// maxWalk bounds the walk up from one process's directory.
const maxWalk = 256

// scanHost reads /proc. A process the daemon may not inspect (one of
// another user when the daemon is not root) is skipped; as root it sees
// every process of its pid namespace.
func scanHost() (*hostScan, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	h := &hostScan{ids: map[uint32]bool{}, dirs: map[fileID]bool{}}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		h.readIDs(dir + "/status")
		h.walkUp(dir + "/cwd")
		h.walkUp(dir + "/root")
	}
	return h, nil
}

// readIDs records the Uid: and Gid: lines of a /proc/<pid>/status.
func (h *hostScan) readIDs(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("Uid:"))
		if !ok {
			v, ok = bytes.CutPrefix(line, []byte("Gid:"))
		}
		if !ok {
			continue
		}
		for _, f := range bytes.Fields(v) {
			if id, err := strconv.ParseUint(string(f), 10, 32); err == nil {
				h.ids[uint32(id)] = true
			}
		}
	}
}

// walkUp records the directory the magic link link (/proc/<pid>/cwd or
// root) leads to and each of its parents. Opening the link reaches the
// directory itself, even in another mount namespace (tier C's /workspace
// is a bind mount of the run's workspace); ".." from it climbs that
// namespace's tree until it stops changing.
func (h *hostScan) walkUp(link string) {
	fd, err := unix.Open(link, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var last fileID
	for range maxWalk {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		id := fileID{dev: st.Dev, ino: st.Ino}
		if id == last {
			break
		}
		h.dirs[id], last = true, id
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		unix.Close(fd)
		fd = up
	}
	unix.Close(fd)
}

// holds reports whether a process works in the directory st (a
// workspace) or below it, or has it as its root, or runs with uid (0: not
// checked) as a user or group id.
func (h *hostScan) holds(st *unix.Stat_t, uid uint32) bool {
	if uid != 0 && h.ids[uid] {
		return true
	}
	return h.dirs[fileID{dev: st.Dev, ino: st.Ino}]
}
