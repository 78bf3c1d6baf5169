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

// demoPolicy is the Cedar policy `execledger dev` writes to policy.cedar
// beside its data directory when the configuration names no policy file
// and none is there yet: principals demo and alice may run echo, sleep,
// process.run and any installed skill; bob may sleep but never echo, to
// show a denial. dev reloads the file when it changes.
const demoPolicy = `// The policy of execledger dev. Edit it: dev reloads it within seconds of a change.
// An edit that does not load is refused (dev logs why, with the line) and the policy
// in force stays. Check an edit first with:   execledger policy check FILE
// See why a request was allowed or denied:    execledger policy explain REQUEST_ID
//
// A request is principal Principal::"<principal>" doing Action::"tool.execute" on
// Tool::"<tool>"; a skill's tool is also checked as Action::"skill.execute" on
// Skill::"<skill id>". Anything no permit matches is denied.

@id("demo-and-alice")
permit (principal, action == Action::"tool.execute", resource)
when { (principal == Principal::"demo" || principal == Principal::"alice") &&
       (resource == Tool::"echo" || resource == Tool::"sleep" ||
        resource == Tool::"process.run" || resource == Tool::"process.status" || resource == Tool::"process.stop") };

// Installed skills' tools (context.skill_id is set only for them), and the skills themselves.
@id("demo-and-alice-skill-tools")
permit (principal, action == Action::"tool.execute", resource)
when { (principal == Principal::"demo" || principal == Principal::"alice") && context.skill_id != "" };

@id("demo-and-alice-skills")
permit (principal, action == Action::"skill.execute", resource)
when { principal == Principal::"demo" || principal == Principal::"alice" };

@id("bob-sleeps")
permit (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"sleep");

@id("bob-never-echoes")
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

// devPolicyFile is the policy file dev authorizes against: the
// configured files' first when there are any, else policy.cedar beside
// the data directory, written with demoPolicy when missing (an edited
// file is never overwritten). It sets cfg.Policy.Files.
func devPolicyFile(cfg *config.Config, logger *slog.Logger) (string, error) {
	if len(cfg.Policy.Files) > 0 {
		return cfg.Policy.Files[0], nil
	}
	dir, err := filepath.Abs(filepath.Dir(filepath.Clean(cfg.Dev.DataDir)))
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "policy.cedar")
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(file, []byte(demoPolicy), 0o644); err != nil {
			return "", err
		}
		logger.Info("wrote the demo policy", slog.String("file", file))
	}
	cfg.Policy.Files = []string{file}
	return file, nil
}

// devTools turns process.run's tier auto into a tier, or turns
// process.run off when neither tier can run here; the lines returned say
// so, for the banner.
func devTools(ctx context.Context, cfg *config.Config, logger *slog.Logger) []string {
	var lines []string
	if cfg.Process.Enabled {
		warn, err := resolveTier(ctx, &cfg.Process)
		switch {
		case err != nil:
			cfg.Process.Enabled = false
			logger.Warn("process.run is off", slog.Any("error", err))
			lines = append(lines, "WARNING: process.run is off: "+err.Error())
		case warn != "":
			logger.Warn(warn)
			lines = append(lines, "WARNING: "+warn)
		default:
			lines = append(lines, fmt.Sprintf("process.run: tier %s, programs %s (process_run.allowed_executables)",
				cfg.Process.Tier, strings.Join(cfg.Process.AllowedExecutables, " ")))
		}
	}
	if cfg.Wasm.Enabled && cfg.Skills.Enabled {
		lines = append(lines, "Skills: installed skills run in tier A once enabled (README, Skills).")
	}
	return lines
}

// devServices uses the policy files (devPolicyFile's) and the configured
// key when there is one, else a key kept beside the data directory.
func devServices(cfg config.Config, logger *slog.Logger) (services, error) {
	var svc services
	var err error
	if svc.policy, err = policy.Load(cfg.Policy.Files...); err != nil {
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
policy and keys, or a demo policy (policy.cedar) and keys it writes beside the data directory.
It reloads the policy file when it changes (policy.reload_interval); an edit that does not
load is refused with a log line and the policy in force stays.
Unlike serve, dev turns process.run on (tier C where bubblewrap works, else tier B when root,
with a warning; process_run.allowed_executables: a few harmless programs) and tier A, so
that installed skills run; the configuration can still turn either off.
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
	cfg, err := config.LoadOnto(config.DevDefault(), e.config, e.environ)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	cfg.Console.Enabled = withConsole
	logger := e.logger(cfg)
	policyFile, err := devPolicyFile(&cfg, logger)
	if err != nil {
		return fail(exitError, "policy: %v", err)
	}
	toolLines := devTools(ctx, &cfg, logger)
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
  Policy: %s (edit it: dev reloads it; execledger policy check FILE checks an edit).
  The demo policy dev writes lets demo and alice run echo, sleep, process.run and installed
  skills, and bob sleep but not echo; for other principals see the README, "Policy".
  Run budget: %d calls per run id unless ledger.set_run_budget says otherwise.
  Login role demo_approver (principal approver) decides approvals: with demo_approver@ for postgres@ in the
  URL, execledger approvals lists what waits with its exact input and digest, and
  execledger approve ID --input-digest DIGEST lets it run. %s
%sCtrl-C stops the service and the embedded database.
`, v, cfg.Database.URL, where, policyFile, cfg.Executor.DefaultMaxCallsPerRun, devSensitive(cfg.Executor.Sensitive), indentLines(toolLines))
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

// indentLines is lines, each indented two spaces and ended.
func indentLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
