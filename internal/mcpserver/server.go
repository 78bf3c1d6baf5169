package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/ledger"
)

// Options configure a Server.
type Options struct {
	// Policy is the Cedar policy set the executor authorizes with
	// (policy.files): tools it denies are not listed.
	Policy *policy.Engine
	// Reader reads the skill catalog, the principals' bindings,
	// attestations and bundles: a ledger_auditor login.
	Reader *pgxpool.Pool
	// Sensitive are executor.sensitive: Cedar sees is_sensitive_action.
	Sensitive []string
	// ProcessRun lists process.run (process_run.enabled).
	ProcessRun bool
	// Skills lists the enabled skills' tools (wasm.enabled and
	// skills.enabled); WasmPolicy is [wasm]'s capability policy.
	Skills     bool
	WasmPolicy wasmrun.Capabilities
	// CallTimeout bounds a tools/call's wait for a final state.
	CallTimeout time.Duration
	// ProgressEvery is how often a call with a progress token looks at
	// its request's state (default 200ms).
	ProgressEvery time.Duration
	// BundleWait is how long a bundle resource waits for a clean
	// checkpoint (default export.DefaultWait).
	BundleWait time.Duration
	Logger     *slog.Logger
	Version    string
}

// Server serves MCP sessions whose tool calls are ledger requests. It is
// safe for concurrent use; each session gets its own mcp.Server.
type Server struct {
	opts Options
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Policy == nil || opts.Reader == nil {
		return nil, errors.New("mcpserver: a policy and a reader are required")
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 15 * time.Minute
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 200 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &Server{opts: opts}, nil
}

// Principal is the login a session acts as: its pool (every call of the
// session goes through it, so the database takes the principal from its
// session_user) and what the policy sees of it.
type Principal struct {
	Login string
	Name  string // ledger.principals.principal
	// Channel and Device are the values an administrator bound to the
	// login ("" when none).
	Channel, Device string
	pool            *pgxpool.Pool
	client          *ledger.Client
}

// channel is the context.channel requests of p carry: the bound one, else
// the claim "mcp".
func (p *Principal) channel() string {
	if p.Channel != "" {
		return p.Channel
	}
	return "mcp"
}

// ErrNoPrincipal: the login is not mapped in ledger.principals.
var ErrNoPrincipal = errors.New("mcpserver: the login is not mapped to a principal (ledger.principals)")

// NewPrincipal identifies pool's login. The Principal's client must be
// closed (Close) when no session uses it any more.
func (s *Server) NewPrincipal(ctx context.Context, pool *pgxpool.Pool) (*Principal, error) {
	p := &Principal{pool: pool}
	var name *string
	if err := pool.QueryRow(ctx, queryWhoAmI).Scan(&p.Login, &name); err != nil {
		return nil, fmt.Errorf("mcpserver: who am I: %w", err)
	}
	if name == nil {
		return nil, fmt.Errorf("%w: login %s", ErrNoPrincipal, p.Login)
	}
	p.Name = *name
	var ch, dev *string
	if err := s.opts.Reader.QueryRow(ctx, queryBindings, p.Login).Scan(&ch, &dev); err != nil {
		return nil, fmt.Errorf("mcpserver: read the bindings of login %s (mcp.reader_url must be a ledger_auditor login): %w", p.Login, err)
	}
	if ch != nil {
		p.Channel = *ch
	}
	if dev != nil {
		p.Device = *dev
	}
	p.client = ledger.NewClient(pool)
	return p, nil
}

// Close stops the principal's completion listener.
func (p *Principal) Close() { p.client.Close() }

// session is one MCP session: a principal and the run its calls belong to.
type session struct {
	s     *Server
	p     *Principal
	run   string
	tools map[string]*tool
	// base ends when the server shuts down: a handler's context that
	// ends with it was not cancelled by the client.
	base context.Context
}

// newSession builds the mcp.Server of one session of p.
// sessionID, when set, is the HTTP session's id.
func (s *Server) newSession(ctx, base context.Context, p *Principal, sessionID string) (*mcp.Server, error) {
	run := "mcp-" + uuid.Must(uuid.NewV7()).String()
	tools, err := s.catalog(ctx, p, run)
	if err != nil {
		return nil, err
	}
	ss := &session{s: s, p: p, run: run, tools: map[string]*tool{}, base: base}
	opts := &mcp.ServerOptions{
		Instructions: "Every tool call is an Execledger request: authorized by policy, run in a sandbox and attested. " +
			"Calls of this session form run " + run + "; read a call's attestation at execledger://requests/{id}/attestation " +
			"and the session's bundle at execledger://runs/" + run + "/bundle.",
		Logger: s.opts.Logger,
	}
	if sessionID != "" {
		opts.GetSessionID = func() string { return sessionID }
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "execledger", Version: s.opts.Version}, opts)
	for _, t := range tools {
		ss.tools[t.name] = t
		srv.AddTool(&mcp.Tool{Name: t.name, Description: t.description, InputSchema: t.schema,
			OutputSchema: outputSchema}, ss.call(t))
	}
	ss.addResources(srv)
	s.opts.Logger.Info("mcp session", "principal", p.Name, "login", p.Login, "run", run, "tools", len(tools))
	return srv, nil
}

// ServeStdio serves one session of p over in and out (newline-delimited
// JSON-RPC) until the client closes in or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, p *Principal, in io.Reader, out io.Writer) error {
	srv, err := s.newSession(ctx, ctx, p, "")
	if err != nil {
		return err
	}
	t := &lineTransport{in: in, out: out}
	err = srv.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}
