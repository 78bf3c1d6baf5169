//go:build unix

package executor

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/pgcluster"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/migrations"
)

// The chaos scenarios run real executor processes (this test binary, see
// TestMain) and break them. `make test` runs them small; `make chaos` runs
// them at full size with -chaos.full (chaossize_test.go).

// chaosKit is what every scenario shares: a signing key the children load,
// a journal the unsafe tool writes, and the public key to verify with.
type chaosKit struct {
	dir, keyPath, journalPath string
	pub                       ed25519.PublicKey
}

func newChaosKit(t *testing.T) chaosKit {
	t.Helper()
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := chaosKit{dir: dir, keyPath: filepath.Join(dir, "seed"), journalPath: filepath.Join(dir, "journal"), pub: pub}
	if err := os.WriteFile(k.keyPath, priv.Seed(), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

type child struct {
	label string
	cmd   *exec.Cmd
	done  chan error
}

// startChild runs an executor process against url; env adds to its
// environment (CHAOS_LEASE=60s: a lease other than 2 s).
func (k chaosKit) startChild(t *testing.T, url, label string, env ...string) *child {
	t.Helper()
	logf, err := os.Create(filepath.Join(k.dir, label+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EXECLEDGER_CHAOS_CHILD=1", "DATABASE_URL="+url, "CHAOS_LABEL="+label,
		"CHAOS_KEY="+k.keyPath, "CHAOS_JOURNAL="+k.journalPath)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{label: label, cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s log (tail):\n%s", label, tail(string(b), 3000))
		}
	})
	return c
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (c *child) kill9(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	c.done <- nil // for the cleanup
}

func (c *child) terminate(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.done <- nil
		if err != nil {
			t.Errorf("%s exited: %v", c.label, err)
		}
	case <-time.After(waitLong):
		t.Errorf("%s did not stop within %s of its SIGTERM", c.label, waitLong)
	}
}

// journalCounts is how often the unsafe tool ran for each request.
func (k chaosKit) journalCounts(t *testing.T) map[uuid.UUID]int {
	t.Helper()
	counts := map[uuid.UUID]int{}
	f, err := os.Open(k.journalPath)
	if os.IsNotExist(err) {
		return counts
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, err := uuid.Parse(strings.Fields(sc.Text())[0])
		if err != nil {
			t.Fatal(err)
		}
		counts[id]++
	}
	return counts
}

// waitAllFinal waits until the n requests are recorded and final, for as
// long as they keep ending (waitProgress).
func waitAllFinal(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	waitProgress(t, fmt.Sprintf("of %d requests not final", n), func() int {
		var final, total int
		err := pool.QueryRow(context.Background(),
			"SELECT count(*) FILTER (WHERE finished_at IS NOT NULL), count(*) FROM ledger.request_status").Scan(&final, &total)
		if err != nil {
			t.Logf("count final requests: %v", err) // a connection lost to a restart: ask again
			return n
		}
		if total != n {
			t.Fatalf("%d requests recorded, want %d", total, n)
		}
		return n - final
	})
}

// waitFinished waits until at least n requests are final.
func waitFinished(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	waitProgress(t, fmt.Sprintf("requests to end before the first %d are final", n), func() int {
		return max(0, n-finishedCount(t, pool))
	})
}

func finishedCount(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.request_status WHERE finished_at IS NOT NULL").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mixedInput is request i of a mixed load: echo, sleep or the unsafe tool.
func mixedInput(i int) ledger.SubmitParams {
	switch i % 3 {
	case 0:
		return ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint("chaos ", i)}}
	case 1:
		return ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 50 + i%200}}
	}
	return ledger.SubmitParams{Tool: "test.journal", Input: map[string]any{"ms": 100 + i%200}}
}

type outcomeRow struct {
	id                            uuid.UUID
	tool, state, kind             string
	claims                        int
	rescuedStarted, attested, ran bool
}

// outcomes reads every request's final state, how often it was claimed,
// whether a lease expired after it had started, and whether its
// attestation verifies.
func (k chaosKit) outcomes(t *testing.T, pool *pgxpool.Pool) []outcomeRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT r.id, r.tool, r.state, coalesce(r.error_kind, ''),
       count(*) FILTER (WHERE e.type IN ('request.claimed', 'request.decided')),
       bool_or(e.type = 'lease.expired' AND (e.payload ->> 'started')::boolean),
       max(e.payload ->> 'envelope') FILTER (WHERE e.type IN ('attestation.signed', 'execution.completed'))
FROM ledger.request_status r JOIN ledger.events e ON e.stream = 'request:' || r.id
GROUP BY r.id, r.tool, r.state, r.error_kind`)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, rows, func(row pgx.CollectableRow) (outcomeRow, error) {
		var o outcomeRow
		var envelope *string
		err := row.Scan(&o.id, &o.tool, &o.state, &o.kind, &o.claims, &o.rescuedStarted, &envelope)
		if err == nil && envelope != nil {
			_, verr := attest.Verify([]byte(*envelope), k.pub)
			o.attested = verr == nil
		}
		return o, err
	})
}

func collect[T any](t *testing.T, rows pgx.Rows, fn pgx.RowToFunc[T]) []T {
	t.Helper()
	out, err := pgx.CollectRows(rows, fn)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChaosKillExecutor kills an executor with kill -9 while mixed requests
// are in flight and starts another: every request ends final, no unsafe
// call runs twice, and outcome_unknown is exactly the unsafe calls whose
// execution had started when their executor died.
func TestChaosKillExecutor(t *testing.T) {
	t.Parallel()
	n := chaosSize(240, 1000)
	k := newChaosKit(t)
	db := testdb.New(t)
	alice := ledger.NewClient(db.LoginRole(t, "alice", "ledger_submitter").Pool)
	defer alice.Close()

	// Everything is submitted before the executor starts, so that a quarter
	// in, three quarters are still to run whatever the machine's load (with
	// submissions slower than the executor, it could finish them all).
	for i := range n {
		if _, err := alice.Submit(context.Background(), mixedInput(i)); err != nil {
			t.Fatal(err)
		}
	}
	a := k.startChild(t, db.URL, "exec-a")
	waitFinished(t, db.Pool, n/4)
	a.kill9(t)
	b := k.startChild(t, db.URL, "exec-b")
	waitAllFinal(t, db.Pool, n)
	b.terminate(t)

	ran := k.journalCounts(t)
	var unknown, rescued int
	for _, o := range k.outcomes(t, db.Pool) {
		if !o.attested {
			t.Errorf("%s (%s %s): no verifiable attestation", o.id, o.tool, o.state)
		}
		if o.claims > 1 {
			rescued++
		}
		unsafe := o.tool == "test.journal"
		switch {
		case ran[o.id] > 1:
			t.Errorf("%s ran %d times", o.id, ran[o.id])
		case unsafe && o.rescuedStarted:
			if o.state != "failed" || o.kind != "outcome_unknown" {
				t.Errorf("%s started before the kill but ended %s/%s", o.id, o.state, o.kind)
			}
			unknown++
		case o.state != "succeeded":
			t.Errorf("%s (%s) ended %s/%s", o.id, o.tool, o.state, o.kind)
		case unsafe && ran[o.id] != 1:
			t.Errorf("%s succeeded but ran %d times", o.id, ran[o.id])
		}
	}
	t.Logf("%d requests, %d claimed again after the kill, %d outcome_unknown", n, rescued, unknown)
	// A request in flight at the kill is either claimed again or, if an
	// unsafe tool had started, ended outcome_unknown: both are rescue.
	if rescued+unknown == 0 {
		t.Error("the kill left nothing in flight: the scenario did not test rescue")
	}
}

// TestChaosTwoExecutorProcesses runs two executor processes on one
// database: no request is claimed by both. Their leases are a minute long:
// on a loaded machine a 2 s lease can expire while its executor lives, and
// the request is then rightly claimed again, which is not what is counted.
func TestChaosTwoExecutorProcesses(t *testing.T) {
	t.Parallel()
	n := chaosSize(400, 3000)
	k := newChaosKit(t)
	db := testdb.New(t)
	alice := ledger.NewClient(db.LoginRole(t, "alice", "ledger_submitter").Pool)
	defer alice.Close()
	a := k.startChild(t, db.URL, "exec-a", "CHAOS_LEASE=1m")
	b := k.startChild(t, db.URL, "exec-b", "CHAOS_LEASE=1m")
	for i := range n {
		if _, err := alice.Submit(context.Background(), mixedInput(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitAllFinal(t, db.Pool, n)
	a.terminate(t)
	b.terminate(t)
	ran := k.journalCounts(t)
	for _, o := range k.outcomes(t, db.Pool) {
		if o.claims != 1 || o.state != "succeeded" || !o.attested || ran[o.id] > 1 {
			t.Errorf("%s (%s): claimed %d times, %s, attested %v, ran %d", o.id, o.tool, o.claims, o.state, o.attested, ran[o.id])
		}
	}
	var execs int
	var split string
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*), string_agg(executor || '=' || n, ' ' ORDER BY executor)
FROM (SELECT payload ->> 'executor' AS executor, count(*) AS n FROM ledger.events WHERE type = 'request.decided' GROUP BY 1) s`).Scan(&execs, &split); err != nil || execs != 2 {
		t.Errorf("%d executors claimed work (%v), want both", execs, err)
	}
	t.Logf("%d requests, each claimed once; claims per executor: %s", n, split)
}

// TestChaosGracefulStop stops one of two executor processes with SIGTERM
// while they share a load: once it has exited it holds no claim, and every
// request ends, claimed once, without a lease having to expire. Its leases
// are a minute long, so that on a loaded machine none expires while its
// executor lives: any that did would be one a stop left behind.
func TestChaosGracefulStop(t *testing.T) {
	t.Parallel()
	n := chaosSize(300, 2000)
	k := newChaosKit(t)
	db := testdb.New(t)
	ctx := context.Background()
	alice := ledger.NewClient(db.LoginRole(t, "alice", "ledger_submitter").Pool)
	defer alice.Close()
	for i := range n {
		if _, err := alice.Submit(ctx, mixedInput(i)); err != nil {
			t.Fatal(err)
		}
	}
	a := k.startChild(t, db.URL, "exec-a", "CHAOS_LEASE=1m")
	b := k.startChild(t, db.URL, "exec-b", "CHAOS_LEASE=1m")
	waitFinished(t, db.Pool, n/3)
	a.terminate(t)
	var held, claimedByA int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger.queue WHERE claimed_by = 'exec-a'),
       (SELECT count(*) FROM ledger.events WHERE type = 'request.decided' AND payload ->> 'executor' = 'exec-a')`).Scan(&held, &claimedByA); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("exec-a exited on SIGTERM still holding %d claims", held)
	}
	waitAllFinal(t, db.Pool, n)
	b.terminate(t)
	ran := k.journalCounts(t)
	stopped := 0
	for _, o := range k.outcomes(t, db.Pool) {
		// A call of exec-a's that outlasted its shutdown grace (10 s, on
		// a loaded machine) ends cancelled: final, not left behind.
		ok := o.state == "succeeded" || o.state == "cancelled" && o.kind == "cancelled"
		if o.claims != 1 || !ok || !o.attested || ran[o.id] > 1 {
			t.Errorf("%s (%s): claimed %d times, %s/%s, attested %v, ran %d", o.id, o.tool, o.claims, o.state, o.kind, o.attested, ran[o.id])
		}
		if o.state == "cancelled" {
			stopped++
		}
	}
	var expired int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events WHERE type = 'lease.expired'").Scan(&expired); err != nil || expired != 0 {
		t.Errorf("%d leases expired (%v): a graceful stop left work to rescue", expired, err)
	}
	t.Logf("%d requests; exec-a claimed %d before its SIGTERM, left none claimed, and stopped %d after its grace", n, claimedByA, stopped)
}

// TestChaosPostgresRestart restarts PostgreSQL under load: the executor
// reconnects and every request, submitted with retries and idempotency
// keys, ends final exactly once.
func TestChaosPostgresRestart(t *testing.T) {
	t.Parallel()
	n := chaosSize(300, 2000)
	k := newChaosKit(t)
	ctx := context.Background()
	parent, err := os.MkdirTemp("/var/tmp", "execledger-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := pgcluster.Options{DataDir: filepath.Join(parent, "pgdata")}
	cluster, err := pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Stop(context.Background()) })
	opts.Port = cluster.Port()
	url := cluster.URL("postgres")
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO ledger.principals VALUES ('postgres', 'alice')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()

	exec := k.startChild(t, url, "exec-restart")
	submit := func(i int) {
		p := mixedInput(i)
		if p.Tool == "test.journal" {
			p = ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "restart"}}
		}
		p.IdempotencyKey = fmt.Sprint("k", i)
		deadline := time.Now().Add(waitLong)
		for {
			_, err := client.Submit(ctx, p)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("submit %d: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := range n {
		if i == n/3 {
			if err := cluster.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			if cluster, err = pgcluster.Start(ctx, opts); err != nil {
				t.Fatal(err)
			}
		}
		submit(i)
	}
	waitAllFinal(t, pool, n)
	exec.terminate(t)
	var rescued int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events WHERE type = 'lease.expired'").Scan(&rescued); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests across a PostgreSQL restart after %d submits; %d leases expired during the outage and were requeued", n, n/3, rescued)
	for _, o := range k.outcomes(t, pool) {
		if o.state != "succeeded" || !o.attested {
			t.Errorf("%s (%s): %s/%s attested %v", o.id, o.tool, o.state, o.kind, o.attested)
		}
	}
}
