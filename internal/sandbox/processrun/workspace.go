//go:build linux

package processrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/execledger/execledger/internal/config"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// Workspace lifecycle.
//
// A workspace lives as long as its run is in use and is deleted once the
// run has been idle for WorkspaceConfig.TTL; its tier B uid is then free
// again (uid.go). Idleness is read from the ledger, which no sandboxed
// program can write, never from the directory (its owner, in tier B the
// run's own uid, sets its times at will). A workspace is deleted when, at
// once:
//
//   - the ledger knows its run (a request, a background process or a run
//     row of it; for <principal>/_req-<id>, that request of that
//     principal). A workspace it has no trace of — made by hand, or by an
//     executor of another database sharing the root — is left alone, and
//     logged once;
//   - no request of the run is pending, awaiting approval or running, and
//     no background process of it is running (ledger.processes);
//   - the newest of its requests' finishes, its background processes'
//     ends and its end (ledger.end_run) is TTL old or older, by the
//     database's clock;
//   - no process on the host has the workspace, or a directory below it,
//     as its working directory, or as its root (/proc/<pid>/cwd and root,
//     climbed with ".." across mount namespaces, so tier C's /workspace
//     bind mount counts); and, for a workspace owned by a uid of the tier
//     B range, no process runs with that uid as any of its user or group
//     ids. (Tier C's processes run as one uid shared by every run, or the
//     daemon's: they are matched by directory, and by the ledger, since a
//     tier C sandbox dies with its pid 1, which lives exactly as long as
//     its call or its background process.)
//
// The decision and the rename that takes the workspace out of the tree
// happen under the workspace root's flock, the one a call takes to make
// or reuse its workspace and give it a uid (Tool.workspace), and the
// ledger is read after the lock is taken: a call of the run either got
// its workspace before (and its request is then running, which the
// ledger shows) or gets a fresh one after. The workspace is renamed to
// _del-<random> in its principal's directory (run ids start with a letter
// or digit, so no run can have that name) and removed from there without
// the lock, by removeAt, which follows no symbolic link. Until the removal
// ends its uid still counts as used; a removal cut short (the daemon
// stopped) is finished by the next sweep. A principal's directory is
// removed, under the lock, once it is empty.
//
// Every executor on the host may sweep the same root: the lock serialises
// the decisions, and two removals of one trash directory tolerate each
// other. Processes on other hosts are out of sight: a root shared by
// several hosts relies on the ledger alone.

// DefaultSweepInterval is how often workspaces are looked at when
// WorkspaceConfig.SweepInterval is 0.
const DefaultSweepInterval = config.ProcessWorkspaceSweepInterval

// WorkspaceConfig configures the deletion of idle workspaces.
type WorkspaceConfig struct {
	// TTL is how long a run stays idle before its workspace is deleted;
	// 0 keeps every workspace forever.
	TTL time.Duration
	// SweepInterval is how often the tool looks, from New until Close; 0
	// means DefaultSweepInterval.
	SweepInterval time.Duration
	// Activity is the ledger; required with a TTL. NewLedgerActivity over
	// the executor's pool is the one implementation.
	Activity Activity
	// Logger receives a line per deletion and what cannot be returned to
	// a caller; nil discards.
	Logger *slog.Logger
}

// SweepResult is what one sweep did.
type SweepResult struct {
	// Deleted are the workspaces deleted, as <principal>/<run>.
	Deleted []string
	// Kept counts the workspaces still in use or not idle long enough.
	Kept int
	// Untraced are the workspaces the ledger has no trace of, left alone.
	Untraced []string
}

// sweeper deletes idle workspaces every SweepInterval.
type sweeper struct {
	t      *Tool
	cfg    WorkspaceConfig
	cancel context.CancelFunc
	loop   sync.WaitGroup

	mu     sync.Mutex
	warned map[string]bool // untraced workspaces already logged
}

// workspaceDefaults checks and fills cfg.Workspaces; New calls it.
func (cfg *Config) workspaceDefaults() error {
	w := &cfg.Workspaces
	if w.TTL < 0 || w.SweepInterval < 0 {
		return errors.New("processrun: Workspaces.TTL and SweepInterval must not be negative")
	}
	if w.TTL > 0 && w.Activity == nil {
		return errors.New("processrun: Workspaces.TTL needs Workspaces.Activity, the ledger that says when a run is idle")
	}
	if w.SweepInterval == 0 {
		w.SweepInterval = DefaultSweepInterval
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// startSweeper starts the periodic sweep when a TTL is set.
func startSweeper(t *Tool) *sweeper {
	if t.cfg.Workspaces.TTL <= 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &sweeper{t: t, cfg: t.cfg.Workspaces, cancel: cancel, warned: map[string]bool{}}
	s.loop.Go(func() {
		tick := time.NewTicker(s.cfg.SweepInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := t.SweepWorkspaces(ctx); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Warn("process.run: workspace sweep failed", slog.Any("error", err))
				}
			}
		}
	})
	return s
}

// stop ends the periodic sweep and waits for one in progress.
func (s *sweeper) stop() {
	if s == nil {
		return
	}
	s.cancel()
	s.loop.Wait()
}

// candidate is one run directory a sweep looks at.
type candidate struct {
	principal, name string
	key             WorkspaceKey
	st              unix.Stat_t
}

// SweepWorkspaces deletes the workspaces that are idle (see the top of
// workspace.go) and returns what it did. The tool calls it every
// SweepInterval; it fails when no TTL is configured.
func (t *Tool) SweepWorkspaces(ctx context.Context) (SweepResult, error) {
	if t.cfg.Workspaces.TTL <= 0 {
		return SweepResult{}, errors.New("processrun: workspaces are kept forever (no TTL)")
	}
	var res SweepResult
	trash, err := t.condemn(ctx, &res)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range trash {
		if err := t.removeTrash(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(trash) > 0 {
		if err := t.removeEmptyPrincipals(); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// trashEntry is a renamed workspace waiting for removal.
type trashEntry struct{ principal, name string }

func (p trashEntry) removeFrom(root int) error {
	pfd, err := unix.Openat(root, p.principal, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", p.principal, err)
	}
	defer unix.Close(pfd)
	if err := removeAt(pfd, p.name); err != nil {
		return fmt.Errorf("%s/%w", p.principal, err)
	}
	return nil
}

// condemn decides, under the workspace root's lock, which workspaces are
// idle and renames them to trash; it returns every trash entry to
// remove, those of earlier sweeps included.
func (t *Tool) condemn(ctx context.Context, res *SweepResult) ([]trashEntry, error) {
	unlock, err := lockDir(t.cfg.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	defer unlock()
	root, err := openRoot(t.cfg.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	cands, trash, err := t.listWorkspaces(root)
	if err != nil || len(cands) == 0 {
		return trash, errors.Join(err, t.removeEmptyPrincipalsAt(root))
	}
	keys := make([]WorkspaceKey, len(cands))
	for i, c := range cands {
		keys[i] = c.key
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	acts, err := t.cfg.Workspaces.Activity.Activity(qctx, keys)
	if err != nil {
		return trash, err
	}
	host, err := scanHost()
	if err != nil {
		return trash, fmt.Errorf("processrun: scanning processes: %w", err)
	}
	var errs []error
	for i, c := range cands {
		if !t.idle(acts[i], c, host, res) {
			continue
		}
		e, err := t.condemnOne(root, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		trash = append(trash, e)
		res.Deleted = append(res.Deleted, c.principal+"/"+c.name)
		t.cfg.Workspaces.Logger.Info("process.run: deleting an idle workspace", slog.String("principal", c.principal),
			slog.String("workspace", c.name), slog.Duration("idle", acts[i].Idle.Round(time.Second)), slog.Int("uid", int(c.st.Uid)))
	}
	return trash, errors.Join(errs...)
}

// idle decides one candidate; see the top of this file.
func (t *Tool) idle(a RunActivity, c candidate, host *hostScan, res *SweepResult) bool {
	if !a.Known {
		res.Untraced = append(res.Untraced, c.principal+"/"+c.name)
		t.warnUntraced(c)
		return false
	}
	uid := uint32(0)
	if t.inRange(c.st.Uid) {
		uid = c.st.Uid
	}
	if a.Busy || a.Idle < t.cfg.Workspaces.TTL || host.holds(&c.st, uid) {
		res.Kept++
		return false
	}
	return true
}

func (t *Tool) warnUntraced(c candidate) {
	s := t.sweep
	if s == nil {
		return
	}
	name := c.principal + "/" + c.name
	s.mu.Lock()
	seen := s.warned[name]
	s.warned[name] = true
	s.mu.Unlock()
	if !seen {
		t.cfg.Workspaces.Logger.Warn("process.run: the ledger has no trace of this workspace; it is never deleted automatically",
			slog.String("workspace", name), slog.String("root", t.cfg.WorkspaceRoot))
	}
}

// condemnOne renames c to a trash name in its principal's directory.
func (t *Tool) condemnOne(root int, c candidate) (trashEntry, error) {
	pfd, err := unix.Openat(root, c.principal, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return trashEntry{}, fmt.Errorf("open %s: %w", c.principal, err)
	}
	defer unix.Close(pfd)
	var b [8]byte
	_, _ = rand.Read(b[:])
	e := trashEntry{principal: c.principal, name: trashPrefix + hex.EncodeToString(b[:])}
	if err := unix.Renameat2(pfd, c.name, pfd, e.name, unix.RENAME_NOREPLACE); err != nil {
		return trashEntry{}, fmt.Errorf("rename %s/%s: %w", c.principal, c.name, err)
	}
	return e, nil
}

// listWorkspaces lists the run directories under root and the trash
// entries. Entries that are not directories, or whose names no call could
// have made, are not workspaces and are left alone.
func (t *Tool) listWorkspaces(root int) ([]candidate, []trashEntry, error) {
	principals, err := readDirAt(root, ".")
	if err != nil {
		return nil, nil, err
	}
	var cands []candidate
	var trash []trashEntry
	for _, p := range principals {
		if component("principal", p) != nil {
			continue
		}
		pfd, err := unix.Openat(root, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // not a directory, or gone
		}
		names, err := readDirAt(pfd, ".")
		for _, n := range names {
			if strings.HasPrefix(n, trashPrefix) {
				trash = append(trash, trashEntry{principal: p, name: n})
				continue
			}
			c := candidate{principal: p, name: n, key: WorkspaceKey{Principal: p}}
			if id, ok := strings.CutPrefix(n, reqPrefix); ok {
				if c.key.RequestID, err = uuid.Parse(id); err != nil || c.key.RequestID == uuid.Nil || reqPrefix+c.key.RequestID.String() != n {
					continue
				}
			} else if component("run_id", n) != nil {
				continue
			} else {
				c.key.RunID = n
			}
			if unix.Fstatat(pfd, n, &c.st, unix.AT_SYMLINK_NOFOLLOW) != nil || c.st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
			cands = append(cands, c)
		}
		unix.Close(pfd)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", p, err)
		}
	}
	return cands, trash, nil
}

// removeTrash removes one trash entry, without the lock.
func (t *Tool) removeTrash(e trashEntry) error {
	root, err := openRoot(t.cfg.WorkspaceRoot)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	if err := e.removeFrom(root); err != nil {
		return fmt.Errorf("processrun: removing a deleted workspace: %w", err)
	}
	return nil
}

// removeEmptyPrincipals removes, under the lock, the principal
// directories that hold nothing.
func (t *Tool) removeEmptyPrincipals() error {
	unlock, err := lockDir(t.cfg.WorkspaceRoot)
	if err != nil {
		return err
	}
	defer unlock()
	root, err := openRoot(t.cfg.WorkspaceRoot)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	return t.removeEmptyPrincipalsAt(root)
}

func (t *Tool) removeEmptyPrincipalsAt(root int) error {
	principals, err := readDirAt(root, ".")
	if err != nil {
		return err
	}
	for _, p := range principals {
		if component("principal", p) != nil {
			continue
		}
		// rmdir removes only an empty directory, and never a link.
		err := unix.Unlinkat(root, p, unix.AT_REMOVEDIR)
		if err != nil && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) &&
			!errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("processrun: removing principal directory %s: %w", p, err)
		}
	}
	return nil
}

// openRoot opens the workspace root directory.
func openRoot(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("processrun: workspace root: %w", err)
	}
	return fd, nil
}

// readDirAt lists the names in the directory name of dirfd.
func readDirAt(dirfd int, name string) ([]string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Readdirnames(-1)
}
