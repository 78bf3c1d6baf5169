package processrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/testdb"
)

// The workspace sweep (workspace.go) against a real ledger: requests and
// process rows are written as the superuser with the times a test needs,
// so that "idle for longer than the TTL" needs no waiting.

const testTTL = time.Hour

// wsEnv is a tool that deletes workspaces idle for testTTL, on a fresh
// ledger read through an executor's login.
type wsEnv struct {
	db   *testdb.DB
	tool *Tool
}

func newWorkspaceEnv(t *testing.T, tier string, mod ...func(*Config)) *wsEnv {
	t.Helper()
	db := testdb.New(t)
	execRole := db.LoginRole(t, "", "ledger_executor")
	e := &wsEnv{db: db}
	e.tool = newTool(t, tier, procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true},
		append([]func(*Config){func(c *Config) {
			c.Cgroups = CgroupsOff
			// The periodic sweep stays out of the way; tests sweep themselves.
			c.Workspaces = WorkspaceConfig{TTL: testTTL, SweepInterval: time.Hour, Activity: NewLedgerActivity(execRole.Pool)}
		}}, mod...)...)
	t.Cleanup(func() {
		if err := e.tool.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return e
}

// request records a request of alice's run (a request workspace when
// runID is ""), in state, finished age ago when the state is final.
func (e *wsEnv) request(t *testing.T, runID string, id uuid.UUID, state string, age time.Duration) {
	t.Helper()
	_, err := e.db.Pool.Exec(context.Background(), `INSERT INTO ledger.request_status (id, principal, tool, run_id, input_digest, state, finished_at)
VALUES ($1, 'alice', 'process.run', nullif($2, ''), '\x00', $3,
        CASE WHEN $3 IN ('succeeded', 'failed', 'denied', 'cancelled') THEN clock_timestamp() - make_interval(secs => $4) END)`,
		id, runID, state, age.Seconds())
	if err != nil {
		t.Fatal(err)
	}
}

// finish makes request id final, age ago.
func (e *wsEnv) finish(t *testing.T, id uuid.UUID, age time.Duration) {
	t.Helper()
	_, err := e.db.Pool.Exec(context.Background(), `UPDATE ledger.request_status
SET state = 'succeeded', finished_at = clock_timestamp() - make_interval(secs => $2) WHERE id = $1`, id, age.Seconds())
	if err != nil {
		t.Fatal(err)
	}
}

// idleRun makes run's workspace, with a file in it, and records one of
// its requests finished age ago.
func (e *wsEnv) idleRun(t *testing.T, runID string, age time.Duration) string {
	t.Helper()
	ws := prepare(t, e.tool, runID)
	if err := os.WriteFile(filepath.Join(ws, "out.txt"), []byte("result"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.request(t, runID, uuid.New(), "succeeded", age)
	return ws
}

func (e *wsEnv) sweep(t *testing.T) SweepResult {
	t.Helper()
	res, err := e.tool.SweepWorkspaces(context.Background())
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return res
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func expectKept(t *testing.T, e *wsEnv, ws, why string) {
	t.Helper()
	res := e.sweep(t)
	if !exists(t, ws) || len(res.Deleted) != 0 {
		t.Fatalf("%s: the workspace was deleted (%+v)", why, res)
	}
}

func expectDeleted(t *testing.T, e *wsEnv, ws string) {
	t.Helper()
	res := e.sweep(t)
	want := filepath.Base(filepath.Dir(ws)) + "/" + filepath.Base(ws)
	if exists(t, ws) || !slices.Contains(res.Deleted, want) {
		t.Fatalf("%s was not deleted: %+v", ws, res)
	}
	// Nothing is left in trash.
	entries, _ := os.ReadDir(filepath.Dir(ws))
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), trashPrefix) {
			t.Errorf("trash left behind: %s", en.Name())
		}
	}
}

// TestWorkspaceDeletedAfterTTL: a run idle for longer than the TTL loses
// its workspace, in both tiers, and so does a request workspace; the
// principal's directory goes once empty.
func TestWorkspaceDeletedAfterTTL(t *testing.T) {
	for _, tier := range tiers {
		t.Run("tier_"+tier, func(t *testing.T) {
			t.Parallel()
			e := newWorkspaceEnv(t, tier)
			ws := e.idleRun(t, "done", 2*testTTL)
			// Tier C hands the workspace to its sandbox uid when it runs.
			if res := e.tool.Run(context.Background(), call("done", input(t, "touch", "made-by-the-run"))); res.ErrorKind != "" {
				t.Fatalf("run: %s: %s", res.ErrorKind, res.Error)
			}
			c := call("", "{}")
			reqWS, err := e.tool.workspace(c)
			if err != nil {
				t.Fatal(err)
			}
			e.request(t, "", c.RequestID, "failed", 2*testTTL)
			res := e.sweep(t)
			slices.Sort(res.Deleted)
			want := []string{"alice/" + filepath.Base(reqWS), "alice/done"}
			if !slices.Equal(res.Deleted, want) || exists(t, ws) || exists(t, reqWS) {
				t.Fatalf("deleted %v, want %v", res.Deleted, want)
			}
			if exists(t, filepath.Dir(ws)) {
				t.Error("the empty principal directory was kept")
			}
		})
	}
}

// TestWorkspaceKeptBeforeTTL: a run that finished recently keeps its
// workspace; the newest finish counts, not the oldest.
func TestWorkspaceKeptBeforeTTL(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	ws := e.idleRun(t, "recent", 3*testTTL)
	e.request(t, "recent", uuid.New(), "succeeded", testTTL/2)
	expectKept(t, e, ws, "finished half a TTL ago")
}

// TestWorkspaceKeptWhileRequestOpen: a run with a pending, waiting or
// running request keeps its workspace however old its other finishes.
func TestWorkspaceKeptWhileRequestOpen(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	for _, state := range []string{"pending", "awaiting_approval", "running"} {
		ws := e.idleRun(t, "open-"+state, 3*testTTL)
		id := uuid.New()
		e.request(t, "open-"+state, id, state, 0)
		expectKept(t, e, ws, "a request is "+state)
		e.finish(t, id, 2*testTTL)
		expectDeleted(t, e, ws)
	}
}

// TestWorkspaceKeptWhileBackgroundProcessRuns: a running background
// process of the run keeps its workspace, whether it is a real process
// (tier B and C) or only a row of ledger.processes (the ledger alone).
func TestWorkspaceKeptWhileBackgroundProcessRuns(t *testing.T) {
	for _, tier := range tiers {
		t.Run("tier_"+tier, func(t *testing.T) {
			t.Parallel()
			e := newBackgroundTool(t, tier, procinput.Policy{AllowedExecutables: []string{"sleep"}}, func(c *Config) {
				// The executor login is made with the tool: set just below.
				c.Workspaces = WorkspaceConfig{TTL: testTTL, SweepInterval: time.Hour, Activity: NewLedgerActivity(nil)}
			})
			e.tool.cfg.Workspaces.Activity = NewLedgerActivity(e.exec.Pool)
			we := &wsEnv{db: e.db, tool: e.tool}
			out := startBackground(t, e, "bg", `{"command":"sleep","args":["600"],"background":{"mode":"run_owned"},"timeout_ms":600000}`)
			// Every request of the run finished long ago: only the process
			// keeps the workspace.
			if _, err := e.db.Pool.Exec(context.Background(), `UPDATE ledger.request_status
SET state = 'succeeded', finished_at = clock_timestamp() - interval '3 hours' WHERE run_id = 'bg'`); err != nil {
				t.Fatal(err)
			}
			ws := workspaceOf(e.tool, "bg")
			expectKept(t, we, ws, "a background process runs")

			// The row alone, its process gone from the host, keeps it too.
			if res := e.tool.StopTool().Run(context.Background(), e.callAs(t, "alice", "bg", handleInput(out.Handle))); res.ErrorKind != "" {
				t.Fatalf("stop: %s: %s", res.ErrorKind, res.Error)
			}
			waitEnded(t, e, "bg", out.Handle)
			if _, err := e.db.Pool.Exec(context.Background(), `UPDATE ledger.processes SET ended_at = clock_timestamp() - interval '3 hours'
WHERE handle = $1`, out.Handle); err != nil {
				t.Fatal(err)
			}
			h := uuid.New()
			if _, err := e.db.Pool.Exec(context.Background(), `INSERT INTO ledger.processes (handle, principal, run_id, request_id, mode, tier,
    command, owner, pid, pid_start, started_at, expires_at)
VALUES ($1, 'alice', 'bg', gen_random_uuid(), 'detached', 'B', 'sleep', 'elsewhere/boot/1/1', 1, 1, now(), now() + interval '1 day')`, h); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Pool.Exec(context.Background(), `UPDATE ledger.request_status
SET state = 'succeeded', finished_at = clock_timestamp() - interval '3 hours' WHERE run_id = 'bg'`); err != nil {
				t.Fatal(err)
			}
			expectKept(t, we, ws, "a ledger.processes row is running")
			// Ended long ago, it no longer does.
			if _, err := e.db.Pool.Exec(context.Background(), `UPDATE ledger.processes SET state = 'ended', ended_at = clock_timestamp() - interval '3 hours'
WHERE principal = 'alice' AND run_id = 'bg'`); err != nil {
				t.Fatal(err)
			}
			expectDeleted(t, we, ws)
		})
	}
}

// hostSleep starts sleep on the host as uid (0: the test's own) in dir
// (or the test's directory), and returns its stop, which kills it and
// waits for it.
func hostSleep(t *testing.T, uid uint32, dir string) (stop func()) {
	t.Helper()
	c := exec.Command("sleep", "600")
	c.Dir = dir
	c.Env = []string{}
	if uid != 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// TestWorkspaceKeptWhileRunUIDLives: in tier B, a process with the run's
// uid anywhere on the host keeps the workspace, whatever the ledger says.
func TestWorkspaceKeptWhileRunUIDLives(t *testing.T) {
	t.Parallel()
	tbRoot(t)
	e := newWorkspaceEnv(t, "B", func(c *Config) { c.UIDBase, c.UIDCount = freeUIDRange(t, 4), 4 })
	ws := e.idleRun(t, "lingering", 2*testTTL)
	uid, err := ownerOf(ws)
	if err != nil || !e.tool.inRange(uid) {
		t.Fatalf("workspace uid %d (%v)", uid, err)
	}
	stop := hostSleep(t, uid, "/")
	expectKept(t, e, ws, "a process runs as the run's uid")
	stop()
	expectDeleted(t, e, ws)
}

// TestWorkspaceKeptWhileAProcessWorksInIt: a process whose working
// directory is in the workspace (tier C's sandboxes share one uid, so the
// directory is what ties them to a run) keeps it.
func TestWorkspaceKeptWhileAProcessWorksInIt(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	ws := e.idleRun(t, "cwd", 2*testTTL)
	sub := filepath.Join(ws, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := hostSleep(t, 0, sub)
	expectKept(t, e, ws, "a process works in the workspace")
	stop()
	expectDeleted(t, e, ws)
}

// TestWorkspaceKeptWhileSandboxRuns: a tier C sandbox working in the
// workspace (its /workspace, a bind mount in another mount namespace)
// keeps it even when the ledger says its run is idle.
func TestWorkspaceKeptWhileSandboxRuns(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	ws := e.idleRun(t, "sandbox", 2*testTTL)
	m := tbMarker(311)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan executor.Result, 1)
	go func() { done <- e.tool.Run(ctx, call("sandbox", input(t, "sleep", m))) }()
	tbWaitPid(t, m)
	expectKept(t, e, ws, "a sandbox runs in it")
	cancel()
	<-done
	expectDeleted(t, e, ws)
}

// TestWorkspaceUntracedKept: a workspace the ledger has no trace of is
// left alone and reported.
func TestWorkspaceUntracedKept(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	ws := prepare(t, e.tool, "by-hand")
	res := e.sweep(t)
	if !exists(t, ws) || !slices.Equal(res.Untraced, []string{"alice/by-hand"}) {
		t.Fatalf("untraced workspace: %+v", res)
	}
}

// outside makes a directory outside the workspace root holding a file,
// and returns both.
func outside(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func expectIntact(t *testing.T, dir, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "keep me" {
		t.Fatalf("outside file %s: %q, %v", file, b, err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("outside directory %s: %v, %v", dir, entries, err)
	}
}

// TestWorkspaceDeletionFollowsNoLinks: links the run planted to a
// directory and a file outside the root, absolute and relative, and to /,
// are removed as links; what they point to survives. Unreadable
// directories and files go too.
func TestWorkspaceDeletionFollowsNoLinks(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	ws := e.idleRun(t, "links", 2*testTTL)
	dir, file := outside(t)
	rel, err := filepath.Rel(filepath.Join(ws, "deep"), dir)
	if err != nil {
		t.Fatal(err)
	}
	// Never a link to "/" or any host directory that matters: with the
	// removal broken on purpose (to see this test fail), such a link led it
	// to delete the machine's /etc. The decoys are the test's own.
	for link, target := range map[string]string{"to-dir": dir, "to-file": file, "deep/rel": rel} {
		p := filepath.Join(ws, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	locked := filepath.Join(ws, "locked")
	if err := os.MkdirAll(filepath.Join(locked, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(locked, "inner", "f"), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	expectDeleted(t, e, ws)
	expectIntact(t, dir, file)
}

// TestRemoveAtSwappedDirectory: a directory that becomes a link to an
// outside directory after it was found to be a directory is removed as a
// link (removeDirAt refuses to enter it); and a directory swapped back and
// forth during a removal never leads it outside.
func TestRemoveAtSwappedDirectory(t *testing.T) {
	t.Parallel()
	dir, file := outside(t)
	base := t.TempDir()
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// The state right after unlinkat said "a directory": now a link.
	if err := os.Symlink(dir, filepath.Join(base, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := removeDirAt(fd, "sub"); !errors.Is(err, errNotDir) {
		t.Fatalf("removeDirAt of a link: %v, want errNotDir", err)
	}
	if err := removeAt(fd, "sub"); err != nil || exists(t, filepath.Join(base, "sub")) {
		t.Fatalf("removeAt of a link: %v", err)
	}
	expectIntact(t, dir, file)

	// A swapper races the removal: d is a directory with files one
	// moment, a link to dir the next.
	for i := range 50 {
		tree := filepath.Join(base, fmt.Sprintf("tree-%d", i))
		d := filepath.Join(tree, "d")
		for j := range 20 {
			if err := os.MkdirAll(filepath.Join(d, fmt.Sprint(j)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		stop := make(chan struct{})
		swapped := make(chan struct{})
		go func() {
			defer close(swapped)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = os.Rename(d, d+".real")
				_ = os.Symlink(dir, d)
				_ = os.Remove(d)
				_ = os.Rename(d+".real", d)
			}
		}()
		_ = removeAt(fd, filepath.Base(tree))
		close(stop)
		<-swapped
		expectIntact(t, dir, file)
	}
}

// freeUIDRange picks n consecutive uids no process uses.
func freeUIDRange(t *testing.T, n uint32) uint32 {
	t.Helper()
	base := uint32(400000 + (os.Getpid()%1000)*64)
	for ; base < 600000; base += n {
		free := true
		for u := base; u < base+n && free; u++ {
			free = len(uidProcesses(u)) == 0
		}
		if free {
			return base
		}
	}
	t.Fatal("no free uid range")
	return 0
}

// TestWorkspaceUIDsReturnToThePool: with three uids, ten runs one after
// the other each get one once the sweep deletes the finished runs'
// workspaces; without the sweep the fourth run finds none.
func TestWorkspaceUIDsReturnToThePool(t *testing.T) {
	t.Parallel()
	tbRoot(t)
	const count = 3
	base := freeUIDRange(t, count)
	e := newWorkspaceEnv(t, "B", func(c *Config) { c.UIDBase, c.UIDCount = base, count })
	for i := range 10 {
		run := fmt.Sprintf("run-%d", i)
		ws, err := e.tool.workspace(call(run, "{}"))
		if err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		uid, err := ownerOf(ws)
		if err != nil || !e.tool.inRange(uid) {
			t.Fatalf("%s: uid %d (%v)", run, uid, err)
		}
		e.request(t, run, uuid.New(), "succeeded", 2*testTTL)
		if i%2 == 1 {
			// Deleted two at a time: the range holds both.
			for _, r := range e.sweep(t).Deleted {
				if !strings.HasPrefix(r, "alice/run-") {
					t.Fatalf("deleted %s", r)
				}
			}
		}
	}

	// The control: the same without sweeping runs out.
	c := newWorkspaceEnv(t, "B", func(c *Config) { c.UIDBase, c.UIDCount = base, count })
	var err error
	for i := range count + 1 {
		if _, err = c.tool.workspace(call(fmt.Sprintf("run-%d", i), "{}")); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrNoFreeUID) {
		t.Fatalf("without the sweep, run %d: %v, want ErrNoFreeUID", count+1, err)
	}
}

// lockProbe is an Activity that records whether the workspace root's
// lock was held while the ledger was read.
type lockProbe struct {
	inner  Activity
	root   string
	held   bool
	called bool
}

func (p *lockProbe) Activity(ctx context.Context, keys []WorkspaceKey) ([]RunActivity, error) {
	fd, err := unix.Open(p.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	p.called = true
	p.held = errors.Is(unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
	return p.inner.Activity(ctx, keys)
}

// TestWorkspaceSweepReadsTheLedgerUnderTheLock: the ledger is read with
// the root's lock held, the lock a call takes to make its workspace, so
// a call's request is either seen running or its workspace made afresh.
func TestWorkspaceSweepReadsTheLedgerUnderTheLock(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C")
	probe := &lockProbe{inner: e.tool.cfg.Workspaces.Activity, root: e.tool.cfg.WorkspaceRoot}
	e.tool.cfg.Workspaces.Activity = probe
	ws := e.idleRun(t, "locked", 2*testTTL)
	expectDeleted(t, e, ws)
	if !probe.called || !probe.held {
		t.Fatalf("ledger read: called %v, under the lock %v", probe.called, probe.held)
	}
}

// TestWorkspaceSweepRunsPeriodically: the tool sweeps by itself every
// SweepInterval until Close.
func TestWorkspaceSweepRunsPeriodically(t *testing.T) {
	t.Parallel()
	e := newWorkspaceEnv(t, "C", func(c *Config) { c.Workspaces.SweepInterval = 50 * time.Millisecond })
	ws := e.idleRun(t, "periodic", 2*testTTL)
	deadline := time.Now().Add(waitLong)
	for exists(t, ws) {
		if time.Now().After(deadline) {
			t.Fatal("the periodic sweep did not delete the idle workspace")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWorkspaceConfigChecked: a TTL needs the ledger.
func TestWorkspaceConfigChecked(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Tier: "C", Self: self, WorkspaceRoot: filepath.Join(t.TempDir(), "ws"), Workspaces: WorkspaceConfig{TTL: time.Hour}})
	if err == nil || !strings.Contains(err.Error(), "Activity") {
		t.Fatalf("a TTL without Activity: %v", err)
	}
}
