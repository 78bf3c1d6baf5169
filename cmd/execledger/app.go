package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/config"
)

// Exit codes. Scripts depend on them; see README "Command line".
const (
	exitOK        = 0 // done; with --wait: the request succeeded
	exitError     = 1 // something failed (database unreachable, bad configuration, ...)
	exitUsage     = 2 // the command line is wrong
	exitNotOK     = 3 // with --wait: the request ended failed, denied or cancelled
	exitTimeout   = 4 // with --wait: the request was not final when the wait ended
	exitNotFound  = 5 // no such request (or one the caller may not see), no such projection
	exitNotFailed = 6 // projector retry: the projection is not failed
)

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand.
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, e *env, args []string) int
}

// env is what every command gets: its output streams and the process
// environment, read only here and in main.
type env struct {
	io      *stdio
	environ []string
}

func commands() []command {
	return []command{
		{"dev", "[--config FILE]", "start an embedded PostgreSQL (unless DATABASE_URL is set), migrate it and serve", runDev},
		{"serve", "[--config FILE]", "run the executor and the operations endpoints against DATABASE_URL", runServe},
		{"migrate", "[--config FILE] [--status]", "apply the embedded schema migrations to DATABASE_URL", runMigrate},
		{"submit", "TOOL JSON [--run R] [--key K] [--context JSON] [--wait] [--timeout D] [--json]", "submit a tool request (JSON - reads stdin)", runSubmit},
		{"status", "ID [--json]", "show a request", runStatus},
		{"audit", "[--principal P] [--tool T] [--since T] [--until T] [--request ID] [--limit N] [--json]", "read the audit trail: decisions and outcomes the caller may see", runAudit},
		{"projector", "status|retry|rebuild|verify [ARGS]", "the projections' checkpoints, lag and failures (execledger projector help)", runProjector},
		{"export", "[--request ID] [--principal P] [--since T] [--until T] [--wait D] --out FILE [--force] [--config FILE]", "write an export bundle of the log, or of some requests, proved against the newest clean published checkpoint", runExport},
		{"verify", "BUNDLE --log-key K --attest-key K [--witness-key K] [--json] | --db --log-key K --attest-key K [--json] | ATTESTATION.json --attest-key K | --replay ID [--pubkey FILE]", "verify a bundle offline, the live log and read model (--db), one attestation, or run a recorded tier A call again (--replay)", runVerify},
		{"prove", "ID [--out DIR] [--json] [--config FILE]", "prove each event of a request against the newest published checkpoint (C2SP tlog-proof files)", runProve},
		{"witness", "--log-key K --key WITNESS_KEY --state FILE [--once] [--interval D] [--config FILE] [--json]", "check that the log's newest checkpoint extends the last one this witness accepted, then cosign it", runWitness},
		{"skill", "new|package|install|audit|approve|enable|disable|rollback|remove|list|show|trust [ARGS]", "skills: write, package and sign, install and audit, approve (two-person rule), enable and disable (execledger skill help)", runSkill},
		{"keygen", "[--out FILE] | --note [--name ORIGIN] | --witness --name NAME", "write an Ed25519 key pair (FILE, FILE.pub): attestations' (default), the log's checkpoints' (--note) or a witness's (--witness)", runKeygen},
		{"bench", "[--mode burndown|continuous] [--system execledger|river|both] [--n N] [--duration D] [--submitters S] [--workers W] [--json] [--keep] [--no-projector] [--no-sealer] [--river-fetch-cooldown D]", "measure throughput and latency against River on fresh databases", runBench},
	}
}

func run(ctx context.Context, args []string, io *stdio, environ []string) int {
	e := &env{io: io, environ: environ}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(io.err)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(io.err, "execledger: unknown command %q\n\n", args[0])
	usage(io.err)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: execledger COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w, "\nConfiguration: --config FILE (TOML), EXECLEDGER_* variables, DATABASE_URL.")
}

// parseInterleaved parses flags that may stand before, between or after
// positional arguments, and returns the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// newFlagSet makes a command's flag set with the shared --config flag.
func newFlagSet(e *env, name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("execledger "+name, flag.ContinueOnError)
	fs.SetOutput(e.io.err)
	path := fs.String("config", e.lookup("EXECLEDGER_CONFIG"), "configuration file (TOML)")
	return fs, path
}

func (e *env) lookup(name string) string {
	for _, kv := range e.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func (e *env) loadConfig(path string) (config.Config, error) {
	return config.Load(path, e.environ)
}

func (e *env) logger(cfg config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(e.io.err, opts))
	}
	return slog.New(slog.NewTextHandler(e.io.err, opts))
}

// fail prints err for the user and returns the exit code.
func (e *env) fail(code int, format string, args ...any) int {
	fmt.Fprintf(e.io.err, "execledger: "+format+"\n", args...)
	return code
}

var errNoDatabase = errors.New("no database: set DATABASE_URL (or database.url in --config)")

func openPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	if cfg.Database.URL == "" {
		return nil, errNoDatabase
	}
	pc, err := pgxpool.ParseConfig(cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	pc.MaxConns = int32(cfg.Database.MaxConns)
	pc.ConnConfig.ConnectTimeout = cfg.Database.ConnectTimeout.Duration
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", redactURL(cfg.Database.URL), err)
	}
	return pool, nil
}

// redactURL hides a password in a database URL before it is printed.
func redactURL(s string) string {
	pc, err := pgxpool.ParseConfig(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", pc.ConnConfig.User, pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database)
}
