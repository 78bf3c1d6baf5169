//go:build linux

package processrun

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"

	"github.com/execledger/execledger/internal/config"
	"golang.org/x/sys/unix"
)

// Per-run uids (tier B, daemon running as root).
//
// Each run's workspace directory is owned by a uid of its own, taken from
// [UIDBase, UIDBase+UIDCount), and the run's processes run as that uid with
// the gid of the same number and no supplementary groups. The directory's
// owner is the allocation record: a run keeps its uid for as long as its
// workspace exists, whichever executor on the host serves it, and a uid is
// free again once its workspace is deleted. Allocation scans the owners of
// every run directory under an exclusive flock(2) on the workspace root
// directory itself (no lock file whose name a principal could take), so
// concurrent calls and executors sharing the root never hand out one uid
// twice. The scan reads every run directory: its cost grows with the
// number of workspaces kept. Idle workspaces are deleted, and their uids
// freed, by the workspace sweep (workspace.go) under the same lock.
//
// So one run's processes cannot signal, ptrace or read /proc of another
// run's, nor enter its 0700 workspace, and RLIMIT_NPROC, which the kernel
// counts per real uid, bounds one run instead of every tier B run on the
// machine. Files a run leaves outside its workspace (in /tmp) stay owned by
// its uid, which a later run may get once the workspace is deleted.
//
// Without root the program runs as the daemon's own uid, as before, and
// the enforcement record says so.

// Defaults of the per-run uid range.
const (
	DefaultUIDBase  = config.ProcessUIDBase
	DefaultUIDCount = config.ProcessUIDCount
)

// ErrNoFreeUID is wrapped by the error of a workspace that cannot get a
// uid because every uid of the range owns a workspace.
var ErrNoFreeUID = errors.New("no free sandbox uid")

// uidDefaults fills and checks the uid range. The range must not hold 0
// (root) nor the last uid, (uid_t)-1, which setuid(2) reads as "no change".
func (cfg *Config) uidDefaults() error {
	if cfg.UIDBase == 0 {
		cfg.UIDBase = DefaultUIDBase
	}
	if cfg.UIDCount == 0 {
		cfg.UIDCount = DefaultUIDCount
	}
	if uint64(cfg.UIDBase)+uint64(cfg.UIDCount) > math.MaxUint32 {
		return fmt.Errorf("processrun: uid range %d+%d passes %d", cfg.UIDBase, cfg.UIDCount, uint32(math.MaxUint32-1))
	}
	return nil
}

// inRange reports whether uid belongs to the per-run range.
func (t *Tool) inRange(uid uint32) bool {
	return uid >= t.cfg.UIDBase && uid-t.cfg.UIDBase < t.cfg.UIDCount
}

func (t *Tool) rangeText() string {
	return fmt.Sprintf("[%d, %d]", t.cfg.UIDBase, t.cfg.UIDBase+t.cfg.UIDCount-1)
}

// assignUID makes sure dir, a run's workspace directory, is owned by a uid
// of the range. A directory owned by any other uid (a fresh one is root's;
// tier C, an older executor or a person may have made it) gets a free uid;
// only the directory is given to it, the files inside keep their owners.
// The caller holds the workspace root's lock (lockDir).
func (t *Tool) assignUID(dir string) error {
	uid, err := ownerOf(dir)
	if err != nil {
		return err
	}
	if t.inRange(uid) {
		return nil
	}
	used, err := t.usedUIDs()
	if err != nil {
		return err
	}
	for i := range t.cfg.UIDCount {
		if u := t.cfg.UIDBase + i; !used[u] {
			return os.Lchown(dir, int(u), int(u))
		}
	}
	return fmt.Errorf("%w: all %d uids of %s own a workspace under %s; delete finished workspaces or widen the range",
		ErrNoFreeUID, t.cfg.UIDCount, t.rangeText(), t.cfg.WorkspaceRoot)
}

// usedUIDs lists the range's uids that own a run directory.
func (t *Tool) usedUIDs() (map[uint32]bool, error) {
	principals, err := os.ReadDir(t.cfg.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	used := map[uint32]bool{}
	for _, p := range principals {
		if !p.IsDir() {
			continue
		}
		runs, err := os.ReadDir(filepath.Join(t.cfg.WorkspaceRoot, p.Name()))
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if !r.IsDir() {
				continue
			}
			fi, err := r.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted while we scan
			}
			if err != nil {
				return nil, err
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && t.inRange(st.Uid) {
				used[st.Uid] = true
			}
		}
	}
	return used, nil
}

// ownerOf is the uid that owns path (not following a symlink).
func ownerOf(path string) (uint32, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no owner", path)
	}
	return st.Uid, nil
}

// lockDir takes an exclusive flock on the directory dir and returns its
// release. Only root can open the workspace root for reading (0711), so no
// sandboxed process can hold the lock.
func lockDir(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// runIDs is who a tier B program runs as.
type runIDs struct {
	// uid and gid go to procinit.Spec; 0 keeps the init's (the daemon's).
	uid, gid uint32
	// perRun is set when they are the run's own.
	perRun bool
}

// runCredentials reads the run's uid from its workspace ws: see the top of
// this file.
func (t *Tool) runCredentials(ws string) (runIDs, error) {
	if os.Geteuid() != 0 {
		return runIDs{}, nil
	}
	uid, err := ownerOf(ws)
	if err != nil {
		return runIDs{}, fmt.Errorf("workspace owner: %w", err)
	}
	if !t.inRange(uid) {
		return runIDs{}, fmt.Errorf("workspace %s is owned by uid %d, outside the sandbox uid range %s", ws, uid, t.rangeText())
	}
	return runIDs{uid: uid, gid: uid, perRun: true}, nil
}

// record describes ids for the enforcement record.
func (t *Tool) uidRecord(ids runIDs) map[string]any {
	if !ids.perRun {
		return map[string]any{
			"uid": os.Geteuid(), "gid": os.Getegid(), "uid_scope": "daemon",
			"uid_note": "the daemon does not run as root: the program runs as the daemon's uid, shared with every run and the daemon itself",
		}
	}
	return map[string]any{"uid": ids.uid, "gid": ids.gid, "uid_scope": "run", "uid_range": t.rangeText()}
}
