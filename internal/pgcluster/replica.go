//go:build unix

package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartStandby makes a streaming standby of primary in opts.DataDir (which
// must be missing or empty) and starts it: pg_basebackup copies the
// primary (WAL streamed alongside, a fast checkpoint), standby.signal is
// written, and primary_conninfo in postgresql.auto.conf names the primary
// on 127.0.0.1 with application_name name, the name synchronous_standby_names
// refers to. It returns once the standby accepts read-only connections
// (a hot standby). The standby uses the primary's server binaries.
//
// The primary's command-line Settings are not copied: a standby that
// StartStandby made and Promote promoted requires no synchronous standby
// of its own until it is given one.
func StartStandby(ctx context.Context, primary *Cluster, name string, opts Options) (*Cluster, error) {
	if opts.DataDir == "" {
		return nil, fmt.Errorf("pgcluster: Options.DataDir is required")
	}
	if name == "" || strings.ContainsAny(name, " '\\\t\n=") {
		return nil, fmt.Errorf("pgcluster: standby name %q must be a plain word (it is the application_name synchronous_standby_names names)", name)
	}
	abs, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: data directory %s: %w", opts.DataDir, err)
	}
	run, err := newRunner(opts.RunAsUser)
	if err != nil {
		return nil, err
	}
	data := dataDir{path: abs}
	if err := data.create(run); err != nil {
		return nil, err
	}
	if v, err := data.version(); err != nil {
		return nil, err
	} else if v != "" {
		return nil, fmt.Errorf("pgcluster: standby data directory %s already holds a cluster (PostgreSQL %s); StartStandby copies the primary into an empty one", abs, v)
	}
	if opts.BinDir == "" {
		opts.BinDir = primary.bin.dir
	}
	bin, err := findBinaries(ctx, run, opts.BinDir, "")
	if err != nil {
		return nil, err
	}
	if bin.major != primary.bin.major {
		return nil, fmt.Errorf("pgcluster: the standby's binaries are PostgreSQL %s, the primary's %s", bin.major, primary.bin.major)
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=%s", primary.port, Superuser, name)
	// The copy's own WAL stream keeps pg_basebackup's application_name:
	// under name, it would count as the synchronous standby meanwhile.
	cmd := run.command(ctx, bin, "pg_basebackup", "-D", abs, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", Superuser,
		"-X", "stream", "-c", "fast", "-w")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pgcluster: pg_basebackup of the primary on port %d into %s: %w; output:\n%s", primary.port, abs, err, lastLines(out.String(), tailLines))
	}
	// The copy holds the primary's log; its sockets and lock files are
	// removed by Start (no server runs here).
	auto := data.join("postgresql.auto.conf")
	f, err := os.OpenFile(auto, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	_, werr := fmt.Fprintf(f, "# written by pgcluster.StartStandby\nprimary_conninfo = '%s'\n", conninfo)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("pgcluster: %s: %w", auto, werr)
	}
	signal := data.join("standby.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	for _, p := range []string{auto, signal} {
		if err := run.chown(p); err != nil {
			return nil, err
		}
	}
	return Start(ctx, opts)
}

// Promote turns a standby into a primary (pg_ctl promote) and returns once
// it accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	cmd := c.run.command(ctx, c.bin, "pg_ctl", "promote", "-D", c.data.path, "-w", "-t", "300")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgcluster: promote the standby on port %d: %w; %s", c.port, err, strings.TrimSpace(out.String()))
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		p, ok, err := readPostmasterPID(c.data.path)
		if err != nil {
			return err
		}
		if ok && p.status == "ready" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: waiting for the promoted server on port %d to accept writes: %w", c.port, ctx.Err())
		case <-c.pm.done:
			return fmt.Errorf("pgcluster: postgres on port %d exited while being promoted; %s", c.port, c.serverLog.tail(c.logOffset))
		case <-tick.C:
		}
	}
}

// Kill ends the server the way a crash of its machine would: SIGKILL to
// the postmaster and then to each of its processes (backends, WAL sender
// and writer, checkpointer), so that no backend finishes what it was
// doing. It returns once the postmaster has exited. Where /proc is not
// there to find the other processes (not Linux), they are left to notice
// the postmaster's death. A killed cluster's Stop and Err return nil.
func (c *Cluster) Kill() error {
	c.mu.Lock()
	c.stopRequested, c.killed = true, true
	c.mu.Unlock()
	children := c.processes()
	c.pm.signal(syscall.SIGKILL)
	for _, pid := range children {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgcluster: kill postgres process %d: %w", pid, err)
		}
	}
	if !c.pm.waitFor(30 * time.Second) {
		return fmt.Errorf("pgcluster: postgres (pid %d, port %d) did not die on SIGKILL", c.pm.pid(), c.port)
	}
	// Children forked after the listing: they work in the data directory.
	for deadline := time.Now().Add(30 * time.Second); ; {
		left := c.processes()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgcluster: postgres processes %v of %s survive SIGKILL", left, c.data.path)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(pollInterval)
	}
}

// processes lists the processes other than the postmaster that work in the
// data directory (every child of a postmaster does), from /proc; none where
// there is no /proc.
func (c *Cluster) processes() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	dirs := map[string]bool{c.data.path: true}
	if real, err := filepath.EvalSymlinks(c.data.path); err == nil {
		dirs[real] = true
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == c.pm.pid() {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && dirs[cwd] {
			pids = append(pids, pid)
		}
	}
	return pids
}
