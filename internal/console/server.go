package console

import (
	"context"
	"crypto/ed25519"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/mod/sumdb/note"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Keys are what the request and log pages check signatures with. Each may
// be missing; the page then says what it could not check.
type Keys struct {
	Log         note.Verifier       // the log's checkpoint key
	Attestation []ed25519.PublicKey // attestation keys (several across a rotation)
	Witnesses   []note.Verifier
}

// Options configure a Server.
type Options struct {
	// LoginURL is the postgres:// URL people sign in to, without user or
	// password.
	LoginURL string
	// ReplicaURL, when set, is a postgres:// URL of a hot standby (without
	// user or password) the pages read from, as the signed-in login; its
	// sessions are read-only. Actions, and sign-in, go to LoginURL.
	ReplicaURL string
	// IdleTimeout ends a session unused this long (default 15m).
	IdleTimeout time.Duration
	// SessionConns is the size of each session's pool (default 2).
	SessionConns int
	// MaxSessions bounds the open sessions (default 200).
	MaxSessions int
	// SignInAttempts per minute per client address and per login name
	// (default 10).
	SignInAttempts int
	// AllowUncheckedPasswords admits sign-ins to a server that accepts any
	// password (trust authentication). Off, such sign-ins are refused.
	AllowUncheckedPasswords bool
	Keys                    Keys
	Logger                  *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 15 * time.Minute
	}
	if o.SessionConns <= 0 {
		o.SessionConns = 2
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 200
	}
	if o.SignInAttempts <= 0 {
		o.SignInAttempts = 10
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Server is the console's HTTP server.
type Server struct {
	opts     Options
	log      *slog.Logger
	sessions *sessionStore
	byAddr   *limiter
	pages    map[string]*template.Template
	static   http.Handler
}

// New returns a console server for opts.
func New(opts Options) (*Server, error) {
	if opts.LoginURL == "" {
		return nil, errors.New("console: no login URL")
	}
	opts = opts.withDefaults()
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	return &Server{
		opts:     opts,
		log:      opts.Logger.With(slog.String("component", "console")),
		sessions: newSessionStore(opts.IdleTimeout, opts.MaxSessions, opts.Now),
		byAddr:   newLimiter(opts.SignInAttempts, time.Minute, opts.Now),
		pages:    pages,
		static:   http.StripPrefix("/static/", http.FileServerFS(sub)),
	}, nil
}

// Close ends every session and closes their pools.
func (s *Server) Close() { s.sessions.closeAll() }

// Handler serves the console.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", s.static)
	mux.HandleFunc("GET /signin", s.signInPage)
	mux.HandleFunc("POST /signin", s.signIn)
	mux.HandleFunc("POST /signout", s.signedIn(s.signOut))
	mux.HandleFunc("GET /{$}", s.signedIn(s.home))
	mux.HandleFunc("GET /requests", s.signedIn(s.requestsPage))
	mux.HandleFunc("GET /requests/{id}", s.signedIn(s.requestPage))
	mux.HandleFunc("GET /requests/{id}/live", s.signedIn(s.requestLive))
	mux.HandleFunc("GET /requests/{id}/bundle", s.signedIn(s.requestBundle))
	mux.HandleFunc("GET /approvals", s.signedIn(s.approvalsPage))
	mux.HandleFunc("POST /approvals/{id}", s.signedIn(s.decideApproval))
	mux.HandleFunc("GET /audit", s.signedIn(s.auditPage))
	mux.HandleFunc("GET /audit/export", s.signedIn(s.auditExport))
	mux.HandleFunc("GET /health", s.signedIn(s.healthPage))
	mux.HandleFunc("GET /quotas", s.signedIn(s.quotasPage))
	mux.HandleFunc("GET /skills", s.signedIn(s.skillsPage))
	mux.HandleFunc("POST /skills/{id}", s.signedIn(s.skillLifecycle))
	mux.HandleFunc("GET /log", s.signedIn(s.logPage))
	mux.HandleFunc("POST /log/verify", s.signedIn(s.verifyUpload))
	return s.secure(mux)
}

// Serve listens on addr (TLS when certFile is set) until ctx ends. ready,
// when not nil, receives the bound address once listening.
func (s *Server) Serve(ctx context.Context, addr, certFile, keyFile string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return s.ServeListener(ctx, ln, certFile, keyFile, ready)
}

// ServeListener is Serve on a listener the caller bound (execledger dev
// binds its ports before it prints where they are); it closes ln.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, certFile, keyFile string, ready func(net.Addr)) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	if ready != nil {
		ready(ln.Addr())
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go s.sessions.sweepEvery(sweepCtx, min(s.opts.IdleTimeout/4, 30*time.Second))
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			errc <- srv.ServeTLS(ln, certFile, keyFile)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	s.Close()
	if err != nil {
		return fmt.Errorf("console: shutdown: %w", err)
	}
	return nil
}

// contentSecurityPolicy admits only the console's own scripts, styles and
// forms: an injected <script> or inline handler does not run.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure sets the security headers on every response and refuses
// cross-site POSTs before any handler runs.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: with no-referrer browsers send
		// "Origin: null" on the console's own form posts.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if r.Method == http.MethodPost && !sameOrigin(r) {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a request a browser marks as coming from another
// site (fetch metadata, which no page can forge), or, from a browser that
// sends none, whose Origin names another origin. A request with neither
// header (a client that is no browser) passes here; the CSRF token still
// guards it.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default: // cross-site, same-site (another port or subdomain), none
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return origin == scheme+r.Host
}

// home sends a person to the first page their roles let them read: the
// requests, or for a reader (who reads only the quota and health read
// models) the quotas.
func (s *Server) home(w http.ResponseWriter, r *http.Request, sess *session) {
	for _, role := range []string{"ledger_submitter", "ledger_approver", "ledger_auditor", "ledger_admin", "ledger_executor"} {
		if sess.has(role) {
			http.Redirect(w, r, "/requests", http.StatusSeeOther)
			return
		}
	}
	http.Redirect(w, r, "/quotas", http.StatusSeeOther)
}
