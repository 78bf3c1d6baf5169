//go:build unix

// Package testrepl gives a test a replicated PostgreSQL of its own: a
// primary and a streaming hot standby on 127.0.0.1, started with
// internal/pgcluster under /var/tmp (initdb, pg_basebackup, standby.signal,
// primary_conninfo), the primary's database "postgres" migrated. With
// Sync, the standby is the primary's synchronous standby
// (synchronous_standby_names), so that a commit returns only once the
// standby has flushed it: the configuration docs/replication.md documents
// for failover without loss. Both servers stop when the test ends.
package testrepl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/pgcluster"
	"github.com/execledger/execledger/migrations"
)

// StandbyName is the standby's application_name.
const StandbyName = "standby1"

// Pair is a primary and its standby.
type Pair struct {
	Primary, Standby *pgcluster.Cluster
	Sync             bool
}

// Options configure New.
type Options struct {
	Sync bool // the standby is synchronous
}

// New starts the pair, migrates the primary and waits until the standby
// has replayed the migration.
func New(t testing.TB, opts Options) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	parent, err := os.MkdirTemp("/var/tmp", "execledger-repl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil { // the postgres user enters it
		t.Fatal(err)
	}
	var settings []string
	if opts.Sync {
		settings = append(settings, "synchronous_standby_names="+StandbyName)
	}
	p := &Pair{Sync: opts.Sync}
	if p.Primary, err = pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(parent, "primary"), Settings: settings}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, p.Primary) })
	// hot_standby_feedback: the primary's vacuum keeps what a long read on
	// the standby (verify --db) still sees, instead of cancelling it.
	if p.Standby, err = pgcluster.StartStandby(ctx, p.Primary, StandbyName, pgcluster.Options{DataDir: filepath.Join(parent, "standby"),
		Settings: []string{"hot_standby_feedback=on"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, p.Standby) })
	conn, err := pgx.Connect(ctx, p.Primary.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := migrations.Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

func stop(t testing.TB, c *pgcluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("stop PostgreSQL on port %d: %v", c.Port(), err)
	}
}

// StopStandby shuts the standby down (fast): from then on the primary's
// commits reach no standby. With Sync the primary's commits then wait.
func (p *Pair) StopStandby(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Standby.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// StartStandbyAgain starts the stopped standby again on its port, still a
// standby of the primary (which it reaches if it is up), and returns once
// it accepts read-only connections.
func (p *Pair) StartStandbyAgain(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: p.Standby.DataDir(), Port: p.Standby.Port(),
		Settings: []string{"hot_standby_feedback=on"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Standby = c
	t.Cleanup(func() { stop(t, c) })
}

// PrimaryURL and StandbyURL connect to one server, as the superuser.
func (p *Pair) PrimaryURL() string { return p.Primary.URL("postgres") }

// StandbyURL connects to the standby.
func (p *Pair) StandbyURL() string { return p.Standby.URL("postgres") }

// WriterURL names both servers, primary first, with
// target_session_attrs=read-write: a client connects to whichever accepts
// writes, before and after a failover.
func (p *Pair) WriterURL() string {
	return p.multiHost("read-write")
}

// ReaderURL names both servers, standby first, with
// target_session_attrs=prefer-standby: reads go to the standby while it
// is one, and to whichever server is up otherwise.
func (p *Pair) ReaderURL() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=prefer-standby",
		pgcluster.Superuser, p.Standby.Port(), p.Primary.Port())
}

func (p *Pair) multiHost(attrs string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=%s",
		pgcluster.Superuser, p.Primary.Port(), p.Standby.Port(), attrs)
}

// WithUser returns url (one of the pair's) for another login.
func WithUser(url, user string) string {
	const prefix = "postgres://" + pgcluster.Superuser + "@"
	return "postgres://" + user + "@" + url[len(prefix):]
}

// WaitReplayed waits until the standby has replayed everything the
// primary has written so far.
func (p *Pair) WaitReplayed(ctx context.Context) error {
	pc, err := pgx.Connect(ctx, p.PrimaryURL())
	if err != nil {
		return err
	}
	defer pc.Close(context.Background())
	var lsn string
	if err := pc.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return err
	}
	sc, err := pgx.Connect(ctx, p.StandbyURL())
	if err != nil {
		return err
	}
	defer sc.Close(context.Background())
	for {
		var done bool
		if err := sc.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testrepl: the standby on port %s did not replay up to %s: %w", strconv.Itoa(p.Standby.Port()), lsn, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// PauseReplay waits until the standby has replayed everything the primary
// has written so far, then pauses its replay (pg_wal_replay_pause) and
// returns once it is paused: from then on what the primary commits is
// not on the standby until ResumeReplay.
func (p *Pair) PauseReplay(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, p.StandbyURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	for {
		var state string
		if err := conn.QueryRow(ctx, "SELECT pg_get_wal_replay_pause_state()").Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == "paused" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the standby's replay is %s, not paused", state)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ResumeReplay resumes the standby's paused replay.
func (p *Pair) ResumeReplay(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.StandbyURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
}
