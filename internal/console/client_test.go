//go:build unix

package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/console"
)

// client is a cookie-keeping HTTP client of one console, like one
// browser: it follows redirects and remembers the last page's CSRF token.
type client struct {
	t    testing.TB
	http *http.Client
	base string
	csrf string
}

func newTestServer(t testing.TB, s *console.Server) *httptest.Server {
	ts := httptest.NewTLSServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func newClient(t testing.TB, ts *httptest.Server) *client {
	jar, _ := cookiejar.New(nil)
	hc := *ts.Client() // a copy: ts.Client() is one shared client
	hc.Jar = jar
	return &client{t: t, http: &hc, base: ts.URL}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (c *client) do(req *http.Request) (int, string) {
	c.t.Helper()
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if m := csrfField.FindSubmatch(b); m != nil {
		c.csrf = string(m[1])
	}
	return resp.StatusCode, string(b)
}

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	return c.do(req)
}

// post posts form with the last page's CSRF token unless form has one.
func (c *client) post(path string, form url.Values) (int, string) {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", c.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

func (c *client) signIn(name, password string) (int, string) {
	c.t.Helper()
	c.get("/signin")
	return c.post("/signin", url.Values{"login": {name}, "password": {password}})
}

func (c *client) mustSignIn(l *login) {
	c.t.Helper()
	if code, body := c.signIn(l.Name, l.Password); code != http.StatusOK || !strings.Contains(body, "Signed in as <strong>"+l.Name) {
		c.t.Fatalf("sign in as %s: %d\n%s", l.Name, code, body)
	}
}
