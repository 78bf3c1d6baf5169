package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/config"
)

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// env is what every command gets: its output streams, the process
// environment (read only here and in main), and the flags every command
// shares.
type env struct {
	io      *stdio
	environ []string
	// json is --json: output as JSON where the command has it, and a
	// failure as one JSON object on stderr (printError).
	json bool
	// config is --config, the configuration file; default $EXECLEDGER_CONFIG.
	config string
	// login is who the command connected as (checkDatabase), for errors.
	login login
}

// run runs the command line args and returns the exit code. Commands
// return an error (fail, exitCode); it is reported here, once.
func run(ctx context.Context, args []string, io *stdio, environ []string) int {
	e := &env{io: io, environ: environ}
	root := newRootCmd(e)
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	return printError(io.err, cmd, err, e.json || wantsJSON(args))
}

// wantsJSON reports whether args ask for --json before a "--", for the
// errors found before the flags are parsed (an unknown command or flag).
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if v, ok := strings.CutPrefix(a, "--json"); ok && (v == "" || v == "=true" || v == "=1") {
			return true
		}
	}
	return false
}

// Command groups of the root's help.
const (
	groupService = "service"
	groupClient  = "client"
	groupAudit   = "audit"
	groupAdmin   = "admin"
)

// newRootCmd builds the command tree. A command is a cobra.Command whose
// RunE returns nil, or an error made by fail or exitCode; run prints it.
func newRootCmd(e *env) *cobra.Command {
	var version bool
	root := &cobra.Command{
		Use:   "execledger",
		Short: "An event-sourced execution ledger on PostgreSQL",
		Long: `Execledger records every tool request, authorization decision and outcome as events in
PostgreSQL, runs the requests in sandboxes, and proves the log with signed checkpoints.

Configuration: a TOML file (--config FILE, or $EXECLEDGER_CONFIG), every key overridable by
EXECLEDGER_<SECTION>_<KEY> variables, and DATABASE_URL for the database.

Exit codes: 0 done, 1 error, 2 usage, 3 not ok, 4 timeout, 5 not found, 6 not failed
(docs/cli.md). With --json an error is one JSON object on stderr.`,
		Example: `  execledger dev
  execledger submit echo '{"text":"hi"}' --wait
  execledger help skill install`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if version {
				return printVersion(e, readVersion())
			}
			return groupRun(cmd, args)
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(e.io.in)
	root.SetOut(e.io.out)
	root.SetErr(e.io.err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.SetUsageTemplate(usageTemplate)
	root.PersistentFlags().BoolVar(&e.json, "json", false, "print an error as one JSON object on stderr (and the output as JSON, where the command has it)")
	root.Flags().BoolVarP(&version, "version", "v", false, "print the version")
	root.AddGroup(
		&cobra.Group{ID: groupService, Title: "Run the service:"},
		&cobra.Group{ID: groupClient, Title: "Submit and follow requests:"},
		&cobra.Group{ID: groupAudit, Title: "Audit and prove:"},
		&cobra.Group{ID: groupAdmin, Title: "Administer:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupService, newDevCmd(e), newServeCmd(e), newConsoleCmd(e), newMCPCmd(e), newMigrateCmd(e), newBenchCmd(e))
	add(groupClient, newSubmitCmd(e), newStatusCmd(e), newRequestsCmd(e), newCancelCmd(e), newApprovalsCmd(e), newApproveCmd(e), newDenyCmd(e))
	add(groupAudit, newAuditCmd(e), newExportCmd(e), newVerifyCmd(e), newProveCmd(e), newWitnessCmd(e))
	add(groupAdmin, newArchiveCmd(e), newProjectorCmd(e), newSkillCmd(e), newPolicyCmd(e), newKeygenCmd(e))
	root.AddCommand(newVersionCmd(e))
	root.SetHelpCommand(newHelpCmd(root))
	initCompletionCmd(root)
	e.finishTree(root)
	return root
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

var errNoDatabase = errors.New("no database: set DATABASE_URL (or database.url in --config)")

func openPool(ctx context.Context, cfg config.Config, opts ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	if cfg.Database.URL == "" {
		return nil, errNoDatabase
	}
	pc, err := pgxpool.ParseConfig(cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	pc.MaxConns = int32(cfg.Database.MaxConns)
	pc.ConnConfig.ConnectTimeout = cfg.Database.ConnectTimeout.Duration
	for _, o := range opts {
		o(pc)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		// The server's refusal (no such role, a wrong password) is the
		// cause; an earlier attempt's failure, such as sslmode=prefer's
		// refused TLS, only hides it.
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			err = pgErr
		}
		return nil, fmt.Errorf("connect to %s: %w", redactURL(cfg.Database.URL), err)
	}
	return pool, nil
}

// openReader opens the pool of the read-only commands (verify --db,
// export, prove, requests, status, audit): database.replica_url when set,
// else database.url. A replica's sessions are read-only
// (default_transaction_read_only), so that these commands behave the
// same on a hot standby and on a primary that a multi-host replica URL
// fell back to.
func openReader(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	if cfg.Database.ReplicaURL == "" {
		return openPool(ctx, cfg)
	}
	readOnly := func(pc *pgxpool.Config) { pc.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on" }
	rc := cfg
	rc.Database.URL = cfg.Database.ReplicaURL
	pool, err := openPool(ctx, rc, readOnly)
	if err != nil {
		return nil, fmt.Errorf("database.replica_url: %w", err)
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
