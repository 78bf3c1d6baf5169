package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/migrations"
)

// devDatabase is the database `execledger dev` keeps in its embedded cluster.
const devDatabase = "execledger"

// demoSQL maps the connecting role to principal "demo" and makes login
// roles for trying the SQL API and the console by hand: demo_alice and
// demo_bob (submitters), demo_approver and demo_auditor. It only adds what
// is missing.
const demoSQL = `
INSERT INTO ledger.principals (login_role, principal) VALUES (current_user, 'demo') ON CONFLICT DO NOTHING;
DO $$
DECLARE r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['demo_alice', 'demo_bob', 'demo_approver', 'demo_auditor'] LOOP
        BEGIN
            EXECUTE format('CREATE ROLE %I LOGIN', r);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
        END;
        EXECUTE format('GRANT %I TO %I', CASE r WHEN 'demo_approver' THEN 'ledger_approver'
                                                WHEN 'demo_auditor' THEN 'ledger_auditor' ELSE 'ledger_submitter' END, r);
    END LOOP;
END $$;
INSERT INTO ledger.principals (login_role, principal)
VALUES ('demo_alice', 'alice'), ('demo_bob', 'bob'), ('demo_approver', 'approver'), ('demo_auditor', 'auditor')
ON CONFLICT DO NOTHING;
`

// demoPolicy is the Cedar policy `execledger dev` authorizes against when
// the configuration names none: principals demo and alice may run echo
// and sleep; bob may sleep but never echo, to show a denial.
const demoPolicy = `@id("demo-and-alice")
permit (principal, action == Action::"tool.execute", resource)
when { (principal == Principal::"demo" || principal == Principal::"alice") &&
       (resource == Tool::"echo" || resource == Tool::"sleep") };

@id("bob-sleeps")
permit (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"sleep");

@id("bob-never-echoes")
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

// devServices uses the configured policy files and key when there are
// any, else the demo policy and a key kept beside the data directory.
func devServices(cfg config.Config, logger *slog.Logger) (services, error) {
	var svc services
	var err error
	if len(cfg.Policy.Files) > 0 {
		svc.policy, err = policy.Load(cfg.Policy.Files...)
	} else {
		svc.policy, err = policy.FromSources([]policy.Source{{Name: "demo.cedar", Text: []byte(demoPolicy)}})
	}
	if err != nil {
		return services{}, err
	}
	key := cfg.Attest.KeyFile
	if key == "" {
		dir, err := filepath.Abs(filepath.Dir(filepath.Clean(cfg.Dev.DataDir)))
		if err != nil {
			return services{}, err
		}
		key = filepath.Join(dir, "attest.key")
		if _, err := os.Stat(key); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return services{}, err
			}
			id, err := attest.GenerateKeyFiles(key, key+".pub")
			if err != nil {
				return services{}, err
			}
			logger.Info("generated an attestation key", slog.String("key_id", id), slog.String("file", key))
		}
	}
	if svc.signer, err = attest.LoadSigner(key); err != nil {
		return services{}, err
	}
	noteKey := cfg.Sealer.NoteKeyFile
	if noteKey == "" {
		noteKey = filepath.Join(filepath.Dir(key), "log.key")
		if _, err := os.Stat(noteKey); errors.Is(err, os.ErrNotExist) {
			vkey, err := ledger.GenerateNoteKey(devLogOrigin, noteKey)
			if err != nil {
				return services{}, err
			}
			logger.Info("generated the log's note key", slog.String("verifier_key", vkey), slog.String("file", noteKey))
		}
	}
	if err := svc.loadLogKeys(cfg.Sealer, noteKey); err != nil {
		return services{}, err
	}
	svc.noteKeyFile = noteKey
	return svc, nil
}

// devLogOrigin names the log of `execledger dev` (its note key's name).
const devLogOrigin = "execledger.dev/log"

func newDevCmd(e *env) *cobra.Command {
	withConsole := true
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start an embedded PostgreSQL (unless DATABASE_URL is set), migrate it and serve",
		Long: `Dev starts an embedded PostgreSQL in [dev] data_dir unless DATABASE_URL is set, migrates
it, adds the demo principals and login roles, and serves as serve does: with the configured
policy and keys, or a demo policy and keys it generates beside the data directory.
It serves the web console too (console.listen; --console=false turns it off) and prints its URL;
on the embedded server, which checks no passwords, any password signs a demo login in.
Ctrl-C stops the service and the embedded database.`,
		Example: `  execledger dev
  execledger dev --config execledger.toml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), e, withConsole)
		},
	}
	cmd.Flags().BoolVar(&withConsole, "console", true, "serve the web console on console.listen")
	e.configFlag(cmd)
	return cmd
}

// embeddedDB is the PostgreSQL server `execledger dev` started.
type embeddedDB interface {
	// Err is why the server stopped by itself, nil while it runs.
	Err() error
}

func runDev(ctx context.Context, e *env, withConsole bool) error {
	cfg, err := e.loadConfig(e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	cfg.Console.Enabled = withConsole
	logger := e.logger(cfg)
	svc, err := devServices(cfg, logger)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	ops, con, portNotes, err := devListeners(&cfg, config.Default())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	svc.opsListener, svc.consoleListener = ops, con
	defer closeListeners(ops, con) // serve closes them; this, if it never ran

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cluster embeddedDB
	var urlFile string
	if cfg.Database.URL == "" {
		c, file, stop, err := startEmbedded(ctx, &cfg, logger, cancel)
		if err != nil {
			return err
		}
		defer stop()
		cluster, urlFile = c, file
		// The embedded server trusts local logins (it listens on loopback
		// only): the console may sign the demo logins in without a
		// password check.
		cfg.Console.AllowUncheckedPasswords = true
	}

	tp, stopTracing, err := e.startTracing(ctx, logger)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer stopTracing()
	svc.tracing = tp
	pool, err := openPool(ctx, cfg, tracePool(tp))
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	v, err := migrations.Migrate(ctx, conn.Conn())
	if err == nil {
		_, err = conn.Exec(ctx, demoSQL)
	}
	conn.Release()
	if err != nil {
		return fail(exitError, "prepare database: %v", err)
	}
	where := ""
	if urlFile != "" {
		where = " (also in " + urlFile + ")"
	}
	fmt.Fprintf(e.io.out, `Execledger dev: schema version %d. In another shell:
  export DATABASE_URL='%s'%s
  execledger submit echo '{"text":"hi"}' --wait   # as principal demo
  execledger requests list                         # all requests: postgres is the superuser
  Login roles demo_alice and demo_bob act as principals alice and bob: put demo_alice@ for postgres@
  in the URL to act as alice, who sees only alice's requests.
  Policy: demo and alice may run echo and sleep; bob may sleep but not echo.
  Login role demo_approver (principal approver) decides approvals: with demo_approver@ for postgres@ in the
  URL, execledger approvals lists what waits with its exact input and digest, and
  execledger approve ID --input-digest DIGEST lets it run. %s
Ctrl-C stops the service and the embedded database.
`, v, cfg.Database.URL, where, devSensitive(cfg.Executor.Sensitive))
	printDevPorts(e, cfg, portNotes)
	if cfg.Console.Enabled {
		svc.consoleReady = func(u string) {
			fmt.Fprintf(e.io.out, "Console: %s  (sign in as demo_alice, demo_approver or demo_auditor", u)
			if cfg.Console.AllowUncheckedPasswords {
				fmt.Fprint(e.io.out, "; the embedded server checks no password, any will do")
			}
			fmt.Fprintln(e.io.out, ")")
		}
	}

	err = serve(ctx, cfg, pool, logger, svc)
	if cluster != nil && cluster.Err() != nil {
		return fail(exitError, "embedded PostgreSQL stopped: %v", cluster.Err())
	}
	if err != nil && ctx.Err() == nil {
		return fail(exitError, "%v", err)
	}
	return nil
}

// lastPort is the port of the URL a previous run wrote to path; 0 when
// there is none.
func lastPort(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	u, err := url.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p < 1 || p > 65535 {
		return 0
	}
	return p
}

// ensureDatabase creates database name on the server at adminURL if missing.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to embedded PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// devSensitive is the banner's line on which tools wait for approval.
func devSensitive(tools []string) string {
	if len(tools) == 0 {
		return "No tool waits for approval now: start dev with\n  EXECLEDGER_EXECUTOR_SENSITIVE=sleep to make sleep wait for one."
	}
	return "Tools that wait for approval: " + strings.Join(tools, ", ") + "."
}
