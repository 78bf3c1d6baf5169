package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/mcpserver"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/ledger"
)

func newMCPCmd(e *env) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol: every tool call an attested ledger request",
		Long: `Mcp serves the Model Context Protocol (MCP) to agents. tools/list returns the tools the caller's
principal may run (echo, sleep, process.run when enabled, the enabled skills' tools) less those the
policy denies; tools/call submits a request (one run per MCP session), waits for its final state
with progress notifications, and answers with the output and the request's id, state, error kind
and attestation digest. Attestations and a run's bundle are resources.

Over stdio (the default) the client acts as the login of DATABASE_URL. With --listen (mcp.listen)
it serves streamable HTTP: each request needs a bearer token (execledger mcp token create) that
maps to a login role; the server connects as that login through mcp.login_url. TLS with
mcp.tls_cert_file and mcp.tls_key_file, required unless the address is a loopback one.

It needs the executor's policy files (policy.files) to list what the policy permits, and a
ledger_auditor login (mcp.reader_url; default DATABASE_URL) to read skills, attestations and
bundles.`,
		Example: `  DATABASE_URL=postgres://agent@db/ledger execledger mcp --config execledger.toml
  execledger mcp --listen 127.0.0.1:8765 --config execledger.toml
  execledger mcp token create agent_login --note "CI agent"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd.Context(), e, listen, cmd.Flags().Changed("listen"))
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve streamable HTTP at `ADDR` (host:port) instead of stdio; default mcp.listen")
	e.configFlag(cmd)
	cmd.AddCommand(newMCPTokenCmd(e))
	return cmd
}

func runMCP(ctx context.Context, e *env, listen string, listenSet bool) error {
	cfg, err := e.loadConfig(e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if listenSet {
		cfg.MCP.Listen = listen
		if err := cfg.Validate(); err != nil {
			return fail(exitUsage, "--listen: %v", err)
		}
	}
	logger := e.logger(cfg).With("component", "mcp")
	if len(cfg.Policy.Files) == 0 {
		return fail(exitError, "policy.files: mcp lists and submits only what the policy permits; set the executor's policy files")
	}
	engine, err := policy.Load(cfg.Policy.Files...)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	if err := e.checkDatabase(ctx, pool); err != nil {
		return fail(exitError, "%v", err)
	}
	reader := pool
	if cfg.MCP.ReaderURL != "" {
		rc := cfg
		rc.Database.URL = cfg.MCP.ReaderURL
		if reader, err = openPool(ctx, rc); err != nil {
			return fail(exitError, "mcp.reader_url: %v", err)
		}
		defer reader.Close()
	}
	w := cfg.Wasm
	srv, err := mcpserver.New(mcpserver.Options{Policy: engine, Reader: reader, Sensitive: cfg.Executor.Sensitive,
		ProcessRun: cfg.Process.Enabled, Skills: w.Enabled && cfg.Skills.Enabled,
		WasmPolicy: wasmrun.Capabilities{HTTPHosts: w.PolicyHTTPHosts, Secrets: w.PolicySecrets,
			StoragePrefixes: w.PolicyStoragePrefixes, Channels: w.PolicyChannels},
		CallTimeout: cfg.MCP.CallTimeout.Duration, Logger: logger, Version: readVersion().Version})
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if cfg.MCP.Listen != "" {
		return serveMCPHTTP(ctx, cfg, srv, pool, logger)
	}
	p, err := srv.NewPrincipal(ctx, pool)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer p.Close()
	if err := srv.ServeStdio(ctx, p, e.io.in, e.io.out); err != nil {
		return fail(exitError, "mcp: %v", err)
	}
	return nil
}

// serveMCPHTTP serves streamable HTTP until ctx ends. pool is the
// gateway's login, which looks tokens up.
func serveMCPHTTP(ctx context.Context, cfg config.Config, srv *mcpserver.Server, pool *pgxpool.Pool, logger *slog.Logger) error {
	connect := func(ctx context.Context, login string) (*pgxpool.Pool, error) {
		lc := cfg
		lc.Database.URL = cfg.MCP.LoginURLFor(login)
		lc.Database.MaxConns = 8
		return openPool(ctx, lc)
	}
	h := srv.NewHTTPHandler(ctx, mcpserver.HTTPOptions{Gateway: pool, Connect: connect, MaxLogins: cfg.MCP.MaxLogins})
	defer h.Close()
	ln, err := net.Listen("tcp", cfg.MCP.Listen)
	if err != nil {
		return fail(exitError, "mcp.listen: %v", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() {
		if cfg.MCP.TLSCertFile != "" {
			done <- hs.ServeTLS(ln, cfg.MCP.TLSCertFile, cfg.MCP.TLSKeyFile)
			return
		}
		done <- hs.Serve(ln)
	}()
	scheme := "http"
	if cfg.MCP.TLSCertFile != "" {
		scheme = "https"
	}
	logger.Info("mcp serving streamable HTTP", "url", scheme+"://"+ln.Addr().String()+"/")
	select {
	case err := <-done:
		return fail(exitError, "mcp: %v", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fail(exitError, "mcp: shutdown: %v", err)
	}
	return nil
}

func newMCPTokenCmd(e *env) *cobra.Command {
	var note string
	create := &cobra.Command{
		Use:   "create LOGIN",
		Short: "Make a bearer token that acts as LOGIN over HTTP; printed once",
		Long: `Create makes a token for execledger mcp over HTTP that acts as the login role LOGIN, prints
it once, and stores only its SHA-256. LOGIN must be mapped in ledger.principals and may not be a
superuser, an executor, an admin or a skill admin. It needs a ledger_admin login.`,
		Example: `  execledger mcp token create agent_login --note "CI agent"`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdminPool(cmd.Context(), e, func(pool *pgxpool.Pool) error {
				token, id, err := mcpserver.CreateToken(cmd.Context(), pool, args[0], note)
				if err != nil {
					return tokenError(err)
				}
				if e.json {
					return printJSON(e, map[string]string{"id": id, "token": token, "login": args[0]})
				}
				fmt.Fprintf(e.io.out, "token %s for login %s (shown once; store it now):\n%s\n", id, args[0], token)
				return nil
			})
		},
	}
	create.Flags().StringVar(&note, "note", "", "what the token is for")
	revoke := &cobra.Command{
		Use:     "revoke ID",
		Short:   "Revoke a token: its next request is refused",
		Example: `  execledger mcp token revoke 3f2a9c0d1e4b`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdminPool(cmd.Context(), e, func(pool *pgxpool.Pool) error {
				if err := mcpserver.RevokeToken(cmd.Context(), pool, args[0]); err != nil {
					if errors.Is(err, mcpserver.ErrNoToken) {
						return fail(exitNotFound, "%v", err)
					}
					return tokenError(err)
				}
				fmt.Fprintf(e.io.out, "revoked %s\n", args[0])
				return nil
			})
		},
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the tokens (ids, logins, revocations; never the tokens)",
		Example: `  execledger mcp token list --json`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdminPool(cmd.Context(), e, func(pool *pgxpool.Pool) error {
				ts, err := mcpserver.ListTokens(cmd.Context(), pool)
				if err != nil {
					return tokenError(err)
				}
				if e.json {
					if ts == nil {
						ts = []mcpserver.TokenInfo{}
					}
					return printJSON(e, ts)
				}
				tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tLOGIN\tCREATED\tREVOKED\tNOTE")
				for _, t := range ts {
					revoked := "-"
					if t.RevokedAt != nil {
						revoked = t.RevokedAt.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Login, t.CreatedAt.Format(time.RFC3339), revoked, t.Note)
				}
				return tw.Flush()
			})
		},
	}
	for _, c := range []*cobra.Command{create, revoke, list} {
		e.configFlag(c)
		e.jsonFlag(c, "print JSON")
	}
	return newGroupCmd("token", "Manage the bearer tokens of execledger mcp over HTTP (ledger_admin)",
		"Token manages the bearer tokens that map HTTP clients of execledger mcp to login roles.",
		"  execledger mcp token create agent_login\n  execledger mcp token list", create, revoke, list)
}

func withAdminPool(ctx context.Context, e *env, f func(*pgxpool.Pool) error) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	return f(pool)
}

func tokenError(err error) error {
	if errors.Is(err, ledger.ErrInvalidInput) {
		return fail(exitUsage, "%v", err)
	}
	return fail(exitError, "%v", err)
}
