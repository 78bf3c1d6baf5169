//go:build unix

package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/console"
	"github.com/execledger/execledger/internal/testdb"
)

// accounts is a database with logins but no running ledger, for the
// tests of sign-in and sessions.
func accounts(t *testing.T) *world {
	t.Helper()
	w := &world{db: testdb.New(t)}
	u, _ := url.Parse(w.db.URL)
	u.User = nil
	w.loginURL = u.String()
	w.alice = w.newLogin(t, "alice", "ledger_submitter")
	w.audrey = w.newLogin(t, "", "ledger_auditor")
	return w
}

const failedMsg = "Sign-in failed: the login or the password is wrong."

func TestSignInOut(t *testing.T) {
	t.Parallel()
	w := accounts(t)
	ts := newTestServer(t, w.server(t, nil))
	c := newClient(t, ts)

	// Not signed in: every page sends the browser to sign in.
	if code, body := c.get("/requests"); code != http.StatusOK || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("GET /requests signed out: %d %s", code, body)
	}
	// A wrong password and a login that does not exist get one answer.
	code1, body1 := c.signIn(w.alice.Name, "wrong")
	code2, body2 := c.signIn("no_such_login_x", "wrong")
	code3, body3 := c.signIn(w.alice.Name, "")
	for i, r := range []struct {
		code int
		body string
	}{{code1, body1}, {code2, body2}, {code3, body3}} {
		if r.code != http.StatusUnauthorized || !strings.Contains(r.body, failedMsg) {
			t.Errorf("failed sign-in %d: %d, want 401 and %q", i, r.code, failedMsg)
		}
	}
	c.mustSignIn(w.alice)
	cookies := c.http.Jar.Cookies(mustURL(t, ts.URL))
	var session *http.Cookie
	for _, ck := range cookies {
		if ck.Name == "__Host-execledger-session" {
			session = ck
		}
	}
	if session == nil {
		t.Fatalf("no session cookie: %v", cookies)
	}
	// The cookie is Secure, HttpOnly and SameSite=Strict.
	resp := signInResponse(t, ts, w.audrey) // another login: its session stays open
	sc := resp.Header.Values("Set-Cookie")
	found := false
	for _, h := range sc {
		if strings.HasPrefix(h, "__Host-execledger-session=") {
			found = true
			for _, attr := range []string{"Path=/", "HttpOnly", "Secure", "SameSite=Strict"} {
				if !strings.Contains(h, attr) {
					t.Errorf("session cookie %q lacks %s", h, attr)
				}
			}
		}
	}
	if !found {
		t.Fatalf("sign-in set no session cookie: %v", sc)
	}
	if h := resp.Header.Get("Content-Security-Policy"); !strings.Contains(h, "script-src 'self'") {
		t.Errorf("CSP %q", h)
	}

	// Sign out ends the session: the old cookie no longer works.
	if code, body := c.post("/signout", nil); code != http.StatusOK || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("sign out: %d %s", code, body)
	}
	replay := newClient(t, ts)
	replay.http.Jar.SetCookies(mustURL(t, ts.URL), []*http.Cookie{session})
	if code, body := replay.get("/requests"); code != http.StatusOK || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("the signed-out cookie still works: %d", code)
	}
	// The session's connections are closed.
	waitFor(t, "the session's backends to end", func() bool {
		var n int
		err := w.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE usename = $1", w.alice.Name).Scan(&n)
		return err == nil && n == 0
	})
}

// signInResponse signs in with a client that does not follow the
// redirect, to see the response's headers.
func signInResponse(t *testing.T, ts *httptest.Server, l *login) *http.Response {
	t.Helper()
	c := newClient(t, ts)
	c.get("/signin")
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	form := url.Values{"login": {l.Name}, "password": {l.Password}, "csrf": {c.csrf}}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d, want 303", resp.StatusCode)
	}
	return resp
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	w := accounts(t)
	ts := newTestServer(t, w.server(t, nil))
	c := newClient(t, ts)
	c.mustSignIn(w.alice)
	good := c.csrf
	for name, form := range map[string]url.Values{
		"no token":    {"csrf": {""}, "decision": {"deny"}},
		"wrong token": {"csrf": {strings.Repeat("A", len(good))}, "decision": {"deny"}},
	} {
		if code, body := c.post("/approvals/00000000-0000-0000-0000-000000000001", form); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	// A cross-site POST is refused before any handler, token or not.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/signout", strings.NewReader("csrf="+good))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if code, _ := c.do(req); code != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", code)
	}
	req, _ = http.NewRequest(http.MethodPost, ts.URL+"/signout", strings.NewReader("csrf="+good))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if code, _ := c.do(req); code != http.StatusForbidden {
		t.Errorf("Sec-Fetch-Site cross-site POST: %d, want 403", code)
	}
	// Still signed in: none of the refused posts signed the session out.
	if _, body := c.get("/requests"); !strings.Contains(body, "Signed in as") {
		t.Fatal("a refused POST ended the session")
	}
	// The sign-in form needs its own token (no login CSRF).
	other := newClient(t, ts)
	if code, _ := other.post("/signin", url.Values{"login": {w.alice.Name}, "password": {w.alice.Password}, "csrf": {"x"}}); code != http.StatusForbidden {
		t.Errorf("sign-in without the form's token: %d, want 403", code)
	}
}

func TestSignInRateLimited(t *testing.T) {
	t.Parallel()
	w := accounts(t)
	ts := newTestServer(t, w.server(t, func(o *console.Options) { o.SignInAttempts = 3 }))
	c := newClient(t, ts)
	for i := 0; i < 3; i++ {
		if code, _ := c.signIn(w.alice.Name, "wrong"); code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, code)
		}
	}
	// The fourth attempt within the minute is refused, right password or not.
	if code, body := c.signIn(w.alice.Name, w.alice.Password); code != http.StatusTooManyRequests || !strings.Contains(body, "Too many sign-in attempts") {
		t.Fatalf("fourth attempt: %d", code)
	}
}

// clock is a settable clock for the idle timeout.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	w := accounts(t)
	clk := &clock{t: time.Now()}
	ts := newTestServer(t, w.server(t, func(o *console.Options) { o.IdleTimeout = 10 * time.Minute; o.Now = clk.now }))
	c := newClient(t, ts)
	c.mustSignIn(w.alice)
	clk.add(9 * time.Minute)
	if _, body := c.get("/requests"); !strings.Contains(body, "Signed in as") {
		t.Fatal("signed out before the idle timeout")
	}
	clk.add(9 * time.Minute) // 9 minutes after the last request: still in
	if _, body := c.get("/requests"); !strings.Contains(body, "Signed in as") {
		t.Fatal("a request did not extend the session")
	}
	clk.add(11 * time.Minute)
	if _, body := c.get("/requests"); !strings.Contains(body, `id="signin"`) {
		t.Fatal("still signed in after the idle timeout")
	}

	// A page's live updates are served, but do not keep an idle session
	// open: only the person's own requests do.
	c.mustSignIn(w.alice)
	live := func() string {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/requests?fragment=rows", nil)
		req.Header.Set("X-Execledger-Live", "1")
		_, body := c.do(req)
		return body
	}
	clk.add(9 * time.Minute)
	if body := live(); !strings.HasPrefix(strings.TrimSpace(body), `<table class="responsive" id="requests-table">`) {
		t.Fatalf("a live update in a live session:\n%s", body)
	}
	clk.add(2 * time.Minute) // 11 minutes after the last request the person made
	if body := live(); !strings.Contains(body, `id="signin"`) {
		t.Fatal("live updates kept an idle session open")
	}
}

func TestSignInRefusesServerThatChecksNoPassword(t *testing.T) {
	t.Parallel()
	w := accounts(t)
	trusted := w.newLogin(t, "trusted", "ledger_submitter", "console_trusted")
	ts := newTestServer(t, w.server(t, nil))
	c := newClient(t, ts)
	if code, body := c.signIn(trusted.Name, "anything at all"); code != http.StatusForbidden || !strings.Contains(body, "does not check this login") {
		t.Fatalf("sign-in to a trusting server: %d", code)
	}
	// With allow_unchecked_passwords (dev's embedded server) it signs in.
	ts2 := newTestServer(t, w.server(t, func(o *console.Options) { o.AllowUncheckedPasswords = true }))
	newClient(t, ts2).mustSignIn(&login{Name: trusted.Name, Password: "anything at all"})
	// A superuser never signs in: it bypasses row security.
	if _, err := w.db.Pool.Exec(context.Background(), "ALTER ROLE "+pgx.Identifier{w.audrey.Name}.Sanitize()+" SUPERUSER"); err != nil {
		t.Fatal(err)
	}
	if code, body := newClient(t, ts).signIn(w.audrey.Name, w.audrey.Password); code != http.StatusForbidden || !strings.Contains(body, "Superuser") {
		t.Fatalf("superuser sign-in: %d", code)
	}
}
