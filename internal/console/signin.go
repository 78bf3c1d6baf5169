package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// sessionCookie names a session. The __Host- prefix makes browsers
	// insist on Secure, Path=/ and no Domain.
	sessionCookie = "__Host-execledger-session"
	// signInCookie carries the token the sign-in form must echo, so that
	// another site cannot sign a browser in as the attacker (login CSRF).
	signInCookie = "__Host-execledger-signin"
)

// msgSignInFailed is the one answer to every failed sign-in: it never
// says whether the login exists, may log in or merely had the wrong
// password.
const msgSignInFailed = "Sign-in failed: the login or the password is wrong."

const msgRateLimited = "Too many sign-in attempts. Wait a minute and try again."

// errUnchecked: the server let the login in with a random password.
var errUnchecked = errors.New("console: the database server does not check this login's password")

// errSuperuser: superusers bypass row security, so they do not sign in.
var errSuperuser = errors.New("console: superuser logins may not sign in")

func setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

type signInData struct {
	Token string
	Login string
	Error string
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil && s.sessions.get(c.Value) != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.renderSignIn(w, http.StatusOK, "", "")
}

func (s *Server) renderSignIn(w http.ResponseWriter, status int, login, msg string) {
	token := randomToken()
	setCookie(w, signInCookie, token, 3600)
	s.render(w, status, "signin", pageData{Title: "Sign in", Data: signInData{Token: token, Login: login, Error: msg}})
}

// clientAddr is the connection's remote address without its port; the
// console sits directly behind no proxy it would trust.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	c, err := r.Cookie(signInCookie)
	if err != nil || !tokenEqual(c.Value, r.PostForm.Get("csrf")) {
		s.renderSignIn(w, http.StatusForbidden, "", "The sign-in form expired or came from another site. Please try again.")
		return
	}
	login, password := strings.TrimSpace(r.PostForm.Get("login")), r.PostForm.Get("password")
	if !s.byAddr.allow("addr:"+clientAddr(r), "login:"+strings.ToLower(login)) {
		s.log.Warn("sign-in rate limited", slog.String("addr", clientAddr(r)))
		s.renderSignIn(w, http.StatusTooManyRequests, login, msgRateLimited)
		return
	}
	// An empty password would let the driver fall back on a passfile or
	// PGPASSWORD of the console's own host.
	if login == "" || password == "" || len(login) > 63 || len(password) > 1024 {
		s.renderSignIn(w, http.StatusUnauthorized, login, msgSignInFailed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	sess, err := s.open(ctx, login, password)
	switch {
	case errors.Is(err, errUnchecked):
		s.log.Warn("sign-in refused: the server does not check passwords", slog.String("login", login))
		s.renderSignIn(w, http.StatusForbidden, login,
			"The database server does not check this login's password (trust authentication), so the console will not sign it in. Ask an operator to require passwords (scram-sha-256).")
		return
	case errors.Is(err, errSuperuser):
		s.renderSignIn(w, http.StatusForbidden, login,
			"Superuser logins bypass row security and may not sign in to the console. Use a login with ledger_* roles.")
		return
	case err != nil:
		s.log.Info("sign-in failed", slog.String("addr", clientAddr(r)), slog.String("error", err.Error()))
		s.renderSignIn(w, http.StatusUnauthorized, login, msgSignInFailed)
		return
	}
	token, err := s.sessions.add(sess)
	if err != nil {
		sess.close()
		s.renderSignIn(w, http.StatusServiceUnavailable, login, err.Error())
		return
	}
	s.log.Info("signed in", slog.String("login", login), slog.String("addr", clientAddr(r)))
	setCookie(w, signInCookie, "", -1)
	setCookie(w, sessionCookie, token, 0)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// open authenticates as login with password and returns the session: its
// pool, principal and roles.
func (s *Server) open(ctx context.Context, login, password string) (*session, error) {
	cfg, err := s.poolConfig(login, password)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	sess := &session{login: login, pool: pool, read: pool}
	if err := s.describe(ctx, sess); err != nil {
		pool.Close()
		return nil, err
	}
	if !s.opts.AllowUncheckedPasswords && s.acceptsAnyPassword(ctx, cfg) {
		pool.Close()
		return nil, errUnchecked
	}
	if s.opts.ReplicaURL != "" {
		// The pages read from the replica as the same login; it connects
		// when a page first reads, and a replica that refuses the login
		// makes that page say so.
		rc, err := s.poolConfigAt(s.opts.ReplicaURL, login, password)
		if err == nil {
			rc.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
			sess.read, err = pgxpool.NewWithConfig(ctx, rc)
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("console: replica: %w", err)
		}
	}
	return sess, nil
}

func (s *Server) poolConfig(login, password string) (*pgxpool.Config, error) {
	return s.poolConfigAt(s.opts.LoginURL, login, password)
}

func (s *Server) poolConfigAt(u, login, password string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, fmt.Errorf("console: login URL: %w", err)
	}
	cfg.ConnConfig.User, cfg.ConnConfig.Password = login, password
	cfg.ConnConfig.RuntimeParams["application_name"] = "execledger console"
	cfg.MaxConns = int32(s.opts.SessionConns)
	cfg.MinConns = 0
	// A session between pages holds no connection for long: the pool
	// reconnects (with the password it keeps for that) when the person
	// comes back.
	cfg.MaxConnIdleTime = min(s.opts.IdleTimeout, time.Minute)
	return cfg, nil
}

const queryDescribeLogin = `SELECT r.rolsuper, coalesce(ledger.current_principal(), ''),
       coalesce(array(SELECT g.rolname FROM pg_roles g
                      WHERE g.rolname LIKE 'ledger\_%' AND pg_has_role(session_user, g.oid, 'MEMBER')
                      ORDER BY g.rolname), '{}')
FROM pg_roles r WHERE r.rolname = session_user`

// queryDescribeNoPrincipal is queryDescribeLogin for a login that may not
// call ledger.current_principal (a reader).
const queryDescribeNoPrincipal = `SELECT r.rolsuper, '',
       coalesce(array(SELECT g.rolname FROM pg_roles g
                      WHERE g.rolname LIKE 'ledger\_%' AND pg_has_role(session_user, g.oid, 'MEMBER')
                      ORDER BY g.rolname), '{}')
FROM pg_roles r WHERE r.rolname = session_user`

// describe reads the login's principal and ledger roles (and so
// authenticates: the pool connects here first).
func (s *Server) describe(ctx context.Context, sess *session) error {
	var super bool
	err := sess.pool.QueryRow(ctx, queryDescribeLogin).Scan(&super, &sess.principal, &sess.roles)
	if isPermission(err) {
		err = sess.pool.QueryRow(ctx, queryDescribeNoPrincipal).Scan(&super, &sess.principal, &sess.roles)
	}
	if err != nil {
		return err
	}
	if super {
		return errSuperuser
	}
	return nil
}

// acceptsAnyPassword tries the login with a random password: a server
// that lets it in checks no password for this login.
func (s *Server) acceptsAnyPassword(ctx context.Context, cfg *pgxpool.Config) bool {
	cc := cfg.ConnConfig.Copy()
	cc.Password = randomToken()
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false
	}
	conn.Close(context.WithoutCancel(ctx))
	return true
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ *session) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.remove(c.Value)
	}
	setCookie(w, sessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// signedIn runs h with the request's session, or sends the browser to sign
// in. A POST must carry the session's CSRF token.
func (s *Server) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var sess *session
		if c, err := r.Cookie(sessionCookie); err == nil {
			if isLiveUpdate(r) {
				sess = s.sessions.peek(c.Value)
			} else {
				sess = s.sessions.get(c.Value)
			}
		}
		if sess == nil {
			if r.Method != http.MethodGet {
				http.Error(w, "not signed in", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			if r.MultipartForm == nil && r.PostForm == nil {
				r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
			}
			if !tokenEqual(sess.csrf, csrfOf(r)) {
				http.Error(w, "the form's CSRF token is missing or wrong; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r, sess)
	}
}

// maxUpload bounds a POST body: a bundle uploaded for verification.
const maxUpload = 64 << 20

func csrfOf(r *http.Request) string {
	if v := r.Header.Get("X-CSRF-Token"); v != "" {
		return v
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			return ""
		}
		return r.FormValue("csrf")
	}
	if err := r.ParseForm(); err != nil {
		return ""
	}
	return r.PostForm.Get("csrf")
}

func tokenEqual(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// liveHeader marks the requests console.js makes to update a page in
// place; they do not count as the person using the console.
const liveHeader = "X-Execledger-Live"

func isLiveUpdate(r *http.Request) bool { return r.Header.Get(liveHeader) == "1" }
