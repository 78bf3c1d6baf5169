//go:build unix

// Package pgcluster starts and stops a private PostgreSQL cluster from the local server binaries.
//
// It backs `execledger dev`: with no DATABASE_URL the product runs its own
// server on a random port of 127.0.0.1, with a data directory reused between
// runs. When the process is root, the server runs as an unprivileged user
// (initdb and postgres refuse to run as root). Nothing system-wide is
// touched: configuration goes on the postgres command line, the Unix socket
// and the server log live inside the data directory.
package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Superuser is the superuser role created by initdb, used in URL.
const Superuser = "postgres"

const (
	portAttempts = 5                     // random ports tried when the chosen one gets taken
	pollInterval = 50 * time.Millisecond // readiness polling
	abortTimeout = 10 * time.Second      // shutting down a server whose start failed
	maxSocketDir = 107 - len("/.s.PGSQL.65535")
)

// Options configure Start.
type Options struct {
	DataDir   string       // required; reused between runs; initdb'd when empty/missing
	BinDir    string       // "" = discover: highest-version /usr/lib/postgresql/*/bin, else dir of `pg_config --bindir`, else PATH
	Port      int          // 0 = pick a random free port on 127.0.0.1
	RunAsUser string       // used only when the process is root; "" = "postgres" if that user exists, else "nobody"
	Logger    *slog.Logger // nil = discard
	// PreferredPort, with Port 0, is tried first when it is free (the
	// port of the last run, so that a URL handed out then still works);
	// taken, a random free port is picked as without it.
	PreferredPort int
	// Settings are server settings ("name=value", as postgres -c takes
	// them) of this run, e.g. "synchronous_standby_names=standby1". They
	// live on the command line only: a standby copied from this cluster
	// (StartStandby) does not inherit them.
	Settings []string
}

// Cluster is a running PostgreSQL server started by Start.
type Cluster struct {
	log       *slog.Logger
	run       runner
	bin       binaries
	data      dataDir
	serverLog serverLog
	socketDir string // "" when Unix sockets are disabled
	port      int
	pm        *postmaster
	logOffset int64 // where this run's server output starts in the log
	settings  []string

	mu            sync.Mutex
	stopRequested bool
	diedFirst     bool // the server had exited before Stop was first called
	killed        bool // by Kill
	stopLogged    bool
}

// Start starts a server on opts.DataDir, running initdb first when the
// directory is missing or empty, and returns once it accepts connections.
// ctx bounds the whole start-up (initdb included), not the server's life.
// A data directory in use by a running server yields an *AlreadyRunningError
// (errors.Is(err, ErrAlreadyRunning)); missing binaries yield ErrNoBinaries.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.DataDir == "" {
		return nil, fmt.Errorf("pgcluster: Options.DataDir is required")
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("pgcluster: invalid port %d", opts.Port)
	}
	if opts.PreferredPort < 0 || opts.PreferredPort > 65535 {
		return nil, fmt.Errorf("pgcluster: invalid preferred port %d", opts.PreferredPort)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: data directory %s: %w", opts.DataDir, err)
	}
	run, err := newRunner(opts.RunAsUser)
	if err != nil {
		return nil, err
	}
	if !run.switchUser && opts.RunAsUser != "" && opts.RunAsUser != run.name {
		log.Debug("pgcluster: not root, ignoring RunAsUser", "run_as_user", opts.RunAsUser, "user", run.name)
	}
	data := dataDir{path: abs}
	if err := data.create(run); err != nil {
		return nil, err
	}
	unlock, err := data.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if running, err := runningIn(data); err != nil {
		return nil, err
	} else if running != nil {
		return nil, running
	}
	version, err := data.version()
	if err != nil {
		return nil, err
	}
	bin, err := findBinaries(ctx, run, opts.BinDir, version)
	if err != nil {
		return nil, err
	}
	if version != "" && version != bin.major {
		return nil, fmt.Errorf("pgcluster: data directory %s was initialized by PostgreSQL %s but the server binaries in %s are PostgreSQL %s; "+
			"install PostgreSQL %s (or point Options.BinDir at it), or upgrade the directory with pg_upgrade",
			data.path, version, bin.dir, bin.major, version)
	}
	if err := data.adopt(run); err != nil {
		return nil, err
	}
	var initdbOutput []byte
	if version == "" {
		log.Info("pgcluster: initializing data directory", "data_dir", data.path, "bin_dir", bin.dir, "user", run.name)
		if initdbOutput, err = data.initdb(ctx, run, bin); err != nil {
			return nil, err
		}
	}

	for _, kv := range opts.Settings {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" || strings.ContainsAny(name, " \t\n") {
			return nil, fmt.Errorf("pgcluster: setting %q is not name=value", kv)
		}
	}
	c := &Cluster{log: log, run: run, bin: bin, data: data, settings: opts.Settings}
	logDir, err := data.privateDir(run, "log")
	if err != nil {
		return nil, err
	}
	c.serverLog = serverLog{path: filepath.Join(logDir, "postgres.log")}
	if err := c.serverLog.rotate(); err != nil {
		return nil, err
	}
	if len(initdbOutput) > 0 {
		if err := c.serverLog.append(run, initdbOutput); err != nil {
			return nil, err
		}
	}
	if len(data.join("socket")) <= maxSocketDir {
		if c.socketDir, err = data.privateDir(run, "socket"); err != nil {
			return nil, err
		}
		removeStaleSockets(c.socketDir) // no server runs here: checked above, under the lock
	} else {
		log.Warn("pgcluster: data directory path too long for a Unix socket inside it; TCP only", "data_dir", data.path)
	}

	for attempt := 1; ; attempt++ {
		port := opts.Port
		if port == 0 && attempt == 1 && opts.PreferredPort != 0 && portFree(opts.PreferredPort) {
			port = opts.PreferredPort
		}
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		portTaken, err := c.launch(ctx, port)
		if err == nil {
			break
		}
		if !portTaken || opts.Port != 0 || attempt == portAttempts {
			return nil, err
		}
		log.Info("pgcluster: port taken before the server could bind it, retrying", "port", port, "attempt", attempt)
	}
	log.Info("pgcluster: postgres started", "port", c.port, "pid", c.pm.pid(), "data_dir", data.path, "log", c.serverLog.path, "user", run.name)
	return c, nil
}

// launch starts postgres on port and waits until it accepts connections.
// portTaken reports a failure because the port was in use.
func (c *Cluster) launch(ctx context.Context, port int) (portTaken bool, err error) {
	logf, offset, err := c.serverLog.open(c.run)
	if err != nil {
		return false, err
	}
	args := []string{
		"-D", c.data.path,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "unix_socket_directories=" + quoteListItem(c.socketDir),
		"-c", "logging_collector=off", // keep everything in our log file
	}
	for _, kv := range c.settings {
		args = append(args, "-c", kv)
	}
	// Not tied to ctx: ctx bounds the start-up, the server outlives it.
	cmd := c.run.command(context.Background(), c.bin, "postgres", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	pm, err := startPostmaster(cmd)
	logf.Close() // the child has its own descriptor
	if err != nil {
		return false, fmt.Errorf("pgcluster: start %s: %w", c.bin.path("postgres"), err)
	}
	if err := c.waitReady(ctx, pm, port); err != nil {
		abortCtx, cancel := context.WithTimeout(context.Background(), abortTimeout)
		_ = pm.stop(abortCtx)
		cancel()
		logged := c.serverLog.since(offset)
		if running, _ := runningIn(c.data); running != nil { // lost a race with a server started by other means
			return false, running
		}
		return portInUse(logged), fmt.Errorf("%w; %s", err, c.serverLog.describe(lastLines(logged, tailLines)))
	}
	c.port, c.pm, c.logOffset = port, pm, offset
	return false, nil
}

// waitReady polls until the postmaster we started reports itself ready in
// postmaster.pid (PostgreSQL 10 and later; older versions are asked with
// pg_isready), it exits, or ctx ends.
func (c *Cluster) waitReady(ctx context.Context, pm *postmaster, port int) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-pm.done:
			if pm.err != nil {
				return fmt.Errorf("pgcluster: postgres exited during start-up on port %d: %w", port, pm.err)
			}
			return fmt.Errorf("pgcluster: postgres exited during start-up on port %d", port)
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: waiting for postgres to accept connections on port %d: %w", port, ctx.Err())
		case <-tick.C:
		}
		p, ok, err := readPostmasterPID(c.data.path)
		if err != nil || !ok || p.pid != pm.pid() {
			continue // not written yet, or still the stale file of a crashed run
		}
		if c.bin.numericMajor() >= 10 {
			if p.status == "ready" || p.status == "standby" { // standby: a hot standby accepting read-only connections
				return nil
			}
			continue
		}
		isready := c.run.command(ctx, c.bin, "pg_isready", "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
		if isready.Run() == nil {
			return nil
		}
	}
}

// URL returns a connection URL for database as the superuser, e.g.
// postgres://postgres@127.0.0.1:PORT/DB?sslmode=disable.
func (c *Cluster) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the TCP port the server listens on (on 127.0.0.1 only).
func (c *Cluster) Port() int { return c.port }

// DataDir returns the absolute path of the data directory.
func (c *Cluster) DataDir() string { return c.data.path }

// LogFile returns the path of the server log (inside the data directory).
func (c *Cluster) LogFile() string { return c.serverLog.path }

// SocketDir returns the directory of the server's Unix socket (for
// `psql -h DIR`), or "" when the data directory path was too long for one.
func (c *Cluster) SocketDir() string { return c.socketDir }

// Done returns a channel closed when the server process has exited, whether
// through Stop or not.
func (c *Cluster) Done() <-chan struct{} { return c.pm.done }

// Err returns nil while the server runs and after a clean Stop, and an
// error (with the tail of the server log) when it exited on its own.
func (c *Cluster) Err() error {
	if !c.pm.exited() {
		return nil
	}
	c.mu.Lock()
	unexpected := !c.stopRequested || c.diedFirst
	killed := c.killed
	c.mu.Unlock()
	if killed {
		return nil
	}
	if !unexpected && c.pm.err == nil {
		return nil
	}
	what := "exited unexpectedly"
	if !unexpected {
		what = "stopped with an error"
	}
	detail := ""
	if c.pm.err != nil {
		detail = fmt.Sprintf(" (%v)", c.pm.err)
	}
	return fmt.Errorf("pgcluster: postgres (pid %d, port %d) %s%s; %s", c.pm.pid(), c.port, what, detail, c.serverLog.tail(c.logOffset))
}

// Stop shuts the server down in fast mode (clients are disconnected, a
// checkpoint is written) and waits until it has exited. If ctx ends first,
// it forces an immediate shutdown (the next start runs crash recovery) and
// returns an error. Stop is idempotent and safe to call concurrently; when
// the server had already exited on its own it returns nil (Err reports
// why it exited).
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	first := !c.stopRequested
	if first {
		c.stopRequested = true
		c.diedFirst = c.pm.exited()
	}
	diedFirst := c.diedFirst
	c.mu.Unlock()
	if diedFirst {
		if first {
			c.log.Warn("pgcluster: postgres had already exited", "err", c.Err())
		}
		return nil
	}
	if err := c.pm.stop(ctx); err != nil {
		return fmt.Errorf("pgcluster: stop postgres (pid %d, port %d): fast shutdown did not finish, forced an immediate shutdown: %w", c.pm.pid(), c.port, err)
	}
	if err := c.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	first = !c.stopLogged
	c.stopLogged = true
	c.mu.Unlock()
	if first {
		c.log.Info("pgcluster: postgres stopped", "port", c.port, "data_dir", c.data.path)
	}
	return nil
}

// portFree reports whether port can be bound on 127.0.0.1 now. Another
// process may take it before postgres binds it; Start retries in that case.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. Another process
// may take it before postgres binds it; Start retries in that case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portInUse reports whether a start-up log says the TCP port was taken.
func portInUse(logged string) bool {
	return strings.Contains(logged, "Address already in use") && strings.Contains(logged, "could not bind")
}

// quoteListItem quotes a path for a PostgreSQL list setting such as
// unix_socket_directories when it holds a separator, a space or a quote.
func quoteListItem(s string) string {
	if !strings.ContainsAny(s, ", \t\"") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// removeStaleSockets deletes Unix sockets and their lock files left in the
// private socket directory by a server that crashed.
func removeStaleSockets(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".s.PGSQL.*"))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

// initdb creates a new cluster in the (empty) data directory: trust
// authentication for local and 127.0.0.1 connections, superuser "postgres",
// UTF8, locale C. It returns initdb's output for the server log. When ctx
// ends, initdb is interrupted and removes what it wrote.
func (d dataDir) initdb(ctx context.Context, r runner, b binaries) ([]byte, error) {
	cmd := r.command(ctx, b, "initdb", "-D", d.path, "--auth=trust", "--username="+Superuser, "-E", "UTF8", "--locale=C")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("pgcluster: initdb %s as %s: %w; initdb output:\n%s", d.path, r.name, err, lastLines(out.String(), tailLines))
	}
	return out.Bytes(), nil
}
