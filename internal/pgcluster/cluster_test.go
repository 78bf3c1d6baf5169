//go:build unix

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testDirPrefix names the directories the tests create, so TestMain can
// find servers they would have left behind.
const testDirPrefix = "pgcluster-test-"

func TestMain(m *testing.M) {
	code := m.Run()
	if leaked := leakedServers(); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "pgcluster tests left postgres processes running: %v\n", leaked)
		for _, pid := range leaked {
			_ = syscall.Kill(pid, syscall.SIGQUIT)
		}
		code = 1
	}
	os.Exit(code)
}

// leakedServers lists postgres processes working in a test data directory.
func leakedServers() []int { return serversIn(testDirPrefix) }

// serversIn lists postgres processes whose working directory contains dir.
func serversIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		if strings.TrimSpace(string(comm)) == "postgres" && strings.Contains(cwd, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireBinaries fails (never skips) the test when the server binaries are
// missing: they are part of the development environment.
func requireBinaries(t *testing.T) {
	t.Helper()
	r, err := newRunner("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := findBinaries(context.Background(), r, "", ""); err != nil {
		t.Fatalf("%v\nthe PostgreSQL server binaries are required: run scripts/ensure-postgres.sh", err)
	}
}

// testDataDir returns a not-yet-existing data directory path inside a fresh
// directory that the run-as user can traverse: t.TempDir() is 0700 and
// owned by root when the tests run as root, which postgres cannot enter.
func testDataDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", testDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "data")
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startCluster starts a cluster and registers its Stop with t.Cleanup.
func startCluster(t *testing.T, dataDir string) *Cluster {
	t.Helper()
	// initdb and a first start have taken close to a minute on a busy
	// machine: the bound is for a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{DataDir: dataDir, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("Stop in cleanup: %v", err)
		}
	})
	return c
}

func connect(t *testing.T, c *Cluster) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("connect to %s: %v", c.URL("postgres"), err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryString(t *testing.T, conn *pgx.Conn, sql string) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func stop(t *testing.T, c *Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	dir := testDataDir(t)

	c := startCluster(t, dir)
	if c.Port() <= 0 {
		t.Fatalf("Port() = %d", c.Port())
	}
	if want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port()); c.URL("postgres") != want {
		t.Errorf("URL = %q, want %q", c.URL("postgres"), want)
	}
	if c.DataDir() != dir {
		t.Errorf("DataDir = %q, want %q", c.DataDir(), dir)
	}
	conn := connect(t, c)
	var one int
	if err := conn.QueryRow(context.Background(), "select 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("select 1 = %d, %v", one, err)
	}
	if got := queryString(t, conn, "show server_encoding"); got != "UTF8" {
		t.Errorf("server_encoding = %q, want UTF8", got)
	}
	if got := queryString(t, conn, "show lc_collate"); got != "C" {
		t.Errorf("lc_collate = %q, want C", got)
	}
	if got := queryString(t, conn, "show listen_addresses"); got != "127.0.0.1" {
		t.Errorf("listen_addresses = %q, want 127.0.0.1", got)
	}
	if got := queryString(t, conn, "show fsync"); got != "on" {
		t.Errorf("fsync = %q, want on", got)
	}
	if got := queryString(t, conn, "show unix_socket_directories"); got != filepath.Join(dir, "socket") {
		t.Errorf("unix_socket_directories = %q, want %q", got, filepath.Join(dir, "socket"))
	}
	if _, err := os.Stat(c.LogFile()); err != nil || !strings.HasPrefix(c.LogFile(), dir) {
		t.Errorf("log file %q not inside the data directory: %v", c.LogFile(), err)
	}
	assertLoopbackOnly(t, c.Port())
	if _, err := conn.Exec(context.Background(), "create table survives_restart (id int primary key); insert into survives_restart values (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	firstPort := c.Port()

	stop(t, c)
	stop(t, c) // idempotent
	if err := c.Err(); err != nil {
		t.Errorf("Err after clean Stop = %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if _, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", firstPort)); err == nil {
		t.Error("server still accepts connections after Stop")
	}

	// Second run on the same directory: no new initdb, the data is there.
	c2 := startCluster(t, dir)
	conn2 := connect(t, c2)
	var id int
	if err := conn2.QueryRow(context.Background(), "select id from survives_restart").Scan(&id); err != nil || id != 42 {
		t.Fatalf("table from the first run: id = %d, %v", id, err)
	}
	conn2.Close(context.Background())
	stop(t, c2)
	stop(t, c2)
}

// assertLoopbackOnly checks that the port is open on 127.0.0.1 and closed on
// every other address of the machine.
func assertLoopbackOnly(t *testing.T, port int) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		t.Fatalf("port %d not open on 127.0.0.1: %v", port, err)
	}
	conn.Close()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	others := []string{"::1"}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			others = append(others, ipn.IP.String())
		}
	}
	for _, ip := range others {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 2*time.Second)
		if err == nil {
			conn.Close()
			t.Errorf("server also listens on %s:%d", ip, port)
		}
	}
}

func TestStartAlreadyRunning(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	dir := testDataDir(t)
	c := startCluster(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c2, err := Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if err == nil {
		c2.Stop(ctx)
		t.Fatal("second Start on a data directory in use succeeded")
	}
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Start: %v, want ErrAlreadyRunning", err)
	}
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.Port != c.Port() || are.PID != c.pm.pid() {
		t.Fatalf("second Start: %#v, want port %d pid %d", are, c.Port(), c.pm.pid())
	}
	if want := fmt.Sprintf("already running on port %d", c.Port()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	// The first server is unaffected.
	conn := connect(t, c)
	if got := queryString(t, conn, "select 'alive'"); got != "alive" {
		t.Errorf("got %q", got)
	}
}

func TestRandomPorts(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	a := startCluster(t, testDataDir(t))
	b := startCluster(t, testDataDir(t))
	if a.Port() == b.Port() {
		t.Fatalf("both clusters on port %d", a.Port())
	}
	for _, c := range []*Cluster{a, b} {
		conn := connect(t, c)
		if got := queryString(t, conn, "select current_setting('port')"); got != strconv.Itoa(c.Port()) {
			t.Errorf("server port %s, Port() = %d", got, c.Port())
		}
	}
}

// A server killed without a shutdown leaves a stale postmaster.pid; the
// next Start must not refuse it (postgres replaces it and runs recovery),
// and Stop on the dead cluster is a no-op while Err reports the death.
func TestRestartAfterCrash(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	dir := testDataDir(t)
	c := startCluster(t, dir)
	conn := connect(t, c)
	if _, err := conn.Exec(context.Background(), "create table t (v text); insert into t values ('committed')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())

	// Kill the postmaster and its children (each child is in its own session).
	for _, pid := range serversIn(dir) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Fatal(err) // ESRCH: a backend exiting on its own meanwhile
		}
	}
	select {
	case <-c.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("server did not die")
	}
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err != nil {
		t.Fatalf("expected a stale postmaster.pid: %v", err)
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "exited unexpectedly") {
		t.Errorf("Err after crash = %v", err)
	}
	stop(t, c) // safe after the process died
	waitServersGone(t, dir)

	c2 := startCluster(t, dir)
	conn2 := connect(t, c2)
	if got := queryString(t, conn2, "select v from t"); got != "committed" {
		t.Errorf("after crash recovery got %q", got)
	}
	conn2.Close(context.Background())

	// A Stop whose context has ended forces an immediate shutdown.
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c2.Stop(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Stop with a canceled context = %v, want context.Canceled", err)
	}
	select {
	case <-c2.Done():
	default:
		t.Error("server still running after a forced Stop")
	}
	waitServersGone(t, dir)
}

// waitServersGone waits for the processes of a killed server to be gone
// (a new postmaster refuses to start while old backends hold its memory).
func waitServersGone(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for len(serversIn(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("postgres processes %v still alive in %s", serversIn(dir), dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestVersionMismatch(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	dir := testDataDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "global"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"PG_VERSION": "9.6\n", "global/pg_control": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Start(context.Background(), Options{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "initialized by PostgreSQL 9.6") {
		t.Fatalf("Start on a 9.6 data directory: %v", err)
	}
}

func TestNotADataDirectory(t *testing.T) {
	t.Parallel()
	dir := testDataDir(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "not a PostgreSQL data directory") {
		t.Fatalf("Start on a non-empty foreign directory: %v", err)
	}
}

func TestUntraversableParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root switches to another user") // not a missing dependency: the check does not apply
	}
	t.Parallel()
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{DataDir: filepath.Join(base, "data")})
	if err == nil || !strings.Contains(err.Error(), "(mode -rwx------) is not traversable by run-as user") {
		t.Fatalf("Start under a 0700 root directory: %v", err)
	}
}

func TestFixedPortTaken(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := testDataDir(t)
	c, err := Start(context.Background(), Options{DataDir: dir, Port: port, Logger: testLogger(t)})
	if err == nil {
		c.Stop(context.Background())
		t.Fatalf("Start on taken port %d succeeded", port)
	}
	for _, want := range []string{"exited during start-up on port " + strconv.Itoa(port), filepath.Join(dir, "log", "postgres.log"), "Address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if !portInUse(err.Error()) {
		t.Errorf("portInUse does not recognize the log of a taken port:\n%v", err)
	}
}

func TestURLEscapesDatabase(t *testing.T) {
	c := &Cluster{port: 5999}
	if got, want := c.URL("my db"), "postgres://postgres@127.0.0.1:5999/my%20db?sslmode=disable"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
}

// TestPreferredPort: a restart gets the port it asks for when it is free,
// and a random one when something else holds it.
func TestPreferredPort(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	dir := testDataDir(t)
	first := startCluster(t, dir)
	port := first.Port()
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := Start(context.Background(), Options{DataDir: dir, PreferredPort: port, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if again.Port() != port {
		t.Errorf("restart on port %d, asked for the free %d", again.Port(), port)
	}
	if err := again.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	moved, err := Start(context.Background(), Options{DataDir: dir, PreferredPort: port, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("a taken preferred port is not an error: %v", err)
	}
	defer moved.Stop(context.Background())
	if moved.Port() == port {
		t.Errorf("started on the taken port %d", port)
	}
}

// TestStandbyFailover: a synchronous streaming standby made by
// StartStandby serves reads of what the primary committed, refuses
// writes, and, once the primary is killed and it is promoted, holds every
// committed row and accepts writes.
func TestStandbyFailover(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	primary, err := Start(ctx, Options{DataDir: testDataDir(t), Logger: testLogger(t), Settings: []string{"synchronous_standby_names=standby1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, primary) })
	standby, err := StartStandby(ctx, primary, "standby1", Options{DataDir: testDataDir(t), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, standby) })
	pc, sc := connect(t, primary), connect(t, standby)
	if got := queryString(t, sc, "SELECT pg_is_in_recovery()::text"); got != "true" {
		t.Fatalf("standby in recovery: %s", got)
	}
	// A commit returns only once the synchronous standby has it.
	if _, err := pc.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('before')"); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, pc, "SELECT string_agg(application_name || ':' || sync_state, ',') FROM pg_stat_replication"); got != "standby1:sync" {
		t.Fatalf("pg_stat_replication: %s", got)
	}
	lsn := queryString(t, pc, "SELECT pg_current_wal_lsn()::text")
	for deadline := time.Now().Add(time.Minute); ; {
		var caught bool
		if err := sc.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&caught); err != nil {
			t.Fatal(err)
		}
		if caught {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby did not replay the primary's commit")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := queryString(t, sc, "SELECT v FROM t"); got != "before" {
		t.Fatalf("standby read %q", got)
	}
	if _, err := sc.Exec(ctx, "INSERT INTO t VALUES ('x')"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a write on the standby: %v", err)
	}

	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if left := serversIn(primary.DataDir()); len(left) > 0 {
		t.Fatalf("processes of the killed primary: %v", left)
	}
	if err := primary.Err(); err != nil {
		t.Errorf("Err of a killed cluster: %v", err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	nc := connect(t, standby)
	if got := queryString(t, nc, "SELECT pg_is_in_recovery()::text"); got != "false" {
		t.Fatalf("promoted standby in recovery: %s", got)
	}
	if _, err := nc.Exec(ctx, "INSERT INTO t VALUES ('after')"); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, nc, "SELECT string_agg(v, ',' ORDER BY v) FROM t"); got != "after,before" {
		t.Fatalf("after the failover: %q", got)
	}

	if _, err := StartStandby(ctx, primary, "bad name", Options{DataDir: testDataDir(t)}); err == nil {
		t.Error("a standby name with a space was accepted")
	}
	if _, err := Start(ctx, Options{DataDir: testDataDir(t), Settings: []string{"novalue"}}); err == nil || !strings.Contains(err.Error(), "name=value") {
		t.Errorf("a setting without a value: %v", err)
	}
}
