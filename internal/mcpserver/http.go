package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxBodyBytes bounds an HTTP request's body: the largest arguments a
// tool takes (a skill's, 448 KiB) and room for the envelope.
const MaxBodyBytes = 1 << 20

// HTTPOptions configure the streamable HTTP handler.
type HTTPOptions struct {
	// Gateway looks tokens up (ledger.mcp_token_login): a login with
	// ledger_mcp_gateway.
	Gateway *pgxpool.Pool
	// Connect opens a pool as login (from mcp.login_url).
	Connect func(ctx context.Context, login string) (*pgxpool.Pool, error)
	// MaxLogins bounds the logins with an open pool.
	MaxLogins int
	// SessionTimeout closes sessions idle this long (default 30m).
	SessionTimeout time.Duration
}

// HTTPHandler serves streamable HTTP. Every request must carry a bearer
// token that ledger.mcp_token_login maps to a login; the session then acts
// as that login through its own pool. The token is looked up at every
// request, so a revoked token stops at once, and a session answers only
// the token that opened it.
type HTTPHandler struct {
	s    *Server
	opts HTTPOptions
	base context.Context
	sdk  *mcp.StreamableHTTPHandler

	mu       sync.Mutex
	logins   map[string]*Principal
	sessions map[string]*httpSession
}

type httpSession struct {
	token   [32]byte // SHA-256 of the token that opened it
	srv     *mcp.Server
	created time.Time
}

type ctxKey int

const (
	keyAuth ctxKey = iota
)

// auth is what the middleware found out about a request, for getServer.
type auth struct {
	p     *Principal
	token [32]byte
	srv   *mcp.Server // built once per request (getServer is asked twice)
	err   error
}

// NewHTTPHandler returns the handler. base ends when the server stops.
// Close it to close the per-login pools.
func (s *Server) NewHTTPHandler(base context.Context, opts HTTPOptions) *HTTPHandler {
	if opts.MaxLogins <= 0 {
		opts.MaxLogins = 64
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	h := &HTTPHandler{s: s, opts: opts, base: base, logins: map[string]*Principal{}, sessions: map[string]*httpSession{}}
	h.sdk = mcp.NewStreamableHTTPHandler(h.getServer, &mcp.StreamableHTTPOptions{
		Logger: s.opts.Logger, SessionTimeout: opts.SessionTimeout, MaxRequestBodyBytes: MaxBodyBytes,
	})
	return h
}

// Close closes the per-login pools.
func (h *HTTPHandler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, p := range h.logins {
		p.Close()
		p.pool.Close()
		delete(h.logins, k)
	}
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		refuse(w, http.StatusUnauthorized, "no bearer token: send Authorization: Bearer <token> (execledger mcp token create)")
		return
	}
	login, err := tokenLogin(r.Context(), h.opts.Gateway, token)
	if err != nil {
		h.s.opts.Logger.Error("mcp token lookup", "err", err)
		refuse(w, http.StatusServiceUnavailable, "the token cannot be checked now")
		return
	}
	if login == "" {
		refuse(w, http.StatusUnauthorized, "the bearer token is unknown or revoked")
		return
	}
	sum := sha256.Sum256([]byte(token))
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		sess := h.sessions[id]
		h.mu.Unlock()
		if sess != nil && sess.token != sum {
			refuse(w, http.StatusForbidden, "this session was opened with another token")
			return
		}
	}
	p, err := h.principal(r.Context(), login)
	if err != nil {
		h.s.opts.Logger.Error("mcp login", "login", login, "err", err)
		refuse(w, http.StatusServiceUnavailable, "cannot act as the token's login now")
		return
	}
	ctx := context.WithValue(r.Context(), keyAuth, &auth{p: p, token: sum})
	stampHTTP(h.sdk, MaxBodyBytes).ServeHTTP(w, r.WithContext(ctx))
}

// refuse answers with a JSON error object.
func refuse(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="execledger"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// principal returns the Principal of login, opening its pool the first
// time.
func (h *HTTPHandler) principal(ctx context.Context, login string) (*Principal, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.logins[login]; p != nil {
		return p, nil
	}
	if len(h.logins) >= h.opts.MaxLogins {
		return nil, fmt.Errorf("mcp.max_logins (%d) logins have a pool open", h.opts.MaxLogins)
	}
	pool, err := h.opts.Connect(ctx, login)
	if err != nil {
		return nil, err
	}
	p, err := h.s.NewPrincipal(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if p.Login != login {
		p.Close()
		pool.Close()
		return nil, fmt.Errorf("mcp.login_url connected as %q, not %q", p.Login, login)
	}
	h.logins[login] = p
	return p, nil
}

// getServer is the SDK's: the session of the request, or a new one for an
// initialize.
func (h *HTTPHandler) getServer(r *http.Request) *mcp.Server {
	a, _ := r.Context().Value(keyAuth).(*auth)
	if a == nil {
		return nil
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		if sess := h.sessions[id]; sess != nil {
			return sess.srv
		}
	}
	if a.srv != nil || a.err != nil {
		return a.srv
	}
	id := rand.Text()
	srv, err := h.s.newSession(r.Context(), h.base, a.p, id)
	if err != nil {
		a.err = err
		h.s.opts.Logger.Error("mcp session", "principal", a.p.Name, "err", err)
		return nil
	}
	a.srv = srv
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweepLocked()
	h.sessions[id] = &httpSession{token: a.token, srv: srv, created: time.Now()}
	return srv
}

// sweepLocked forgets sessions that have ended (or never began).
func (h *HTTPHandler) sweepLocked() {
	for id, sess := range h.sessions {
		if time.Since(sess.created) < time.Minute {
			continue
		}
		live := false
		for range sess.srv.Sessions() {
			live = true
			break
		}
		if !live {
			delete(h.sessions, id)
		}
	}
}
