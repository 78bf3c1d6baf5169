package egress

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRefusals(t *testing.T) {
	t.Parallel()
	// A port nothing listens on, for dial_failed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := portOf(t, ln.Addr().String())
	ln.Close()

	var dials []string
	b := setup(t, setupOpts{cfg: func(c *Config) {
		c.Ports = []int{80, 443, closed}
		dial := loopbackDial(t)
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials = append(dials, addr)
			return dial(ctx, network, addr)
		}
	}})
	b.resolver.set("fail.test")

	cases := []struct {
		name, req string
		status    int
		reason    string
		host      string
		addr      string // refused or dialled address, "" for none
	}{
		{"name not allowlisted", "CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n",
			403, ReasonHostNotAllowlisted, "other.test", ""},
		{"label boundary", "CONNECT evilcorp.local:443 HTTP/1.1\r\n\r\n", 403, ReasonHostNotAllowlisted, "evilcorp.local", ""},
		{"suffix does not cover apex", "GET http://corp.local/ HTTP/1.1\r\n\r\n", 403, ReasonHostNotAllowlisted, "corp.local", ""},
		{"allowlisted name resolving to private", "CONNECT evil.test:443 HTTP/1.1\r\n\r\n",
			403, ReasonPrivateAddress, "evil.test", "10.0.0.1:443"},
		{"private IP literal", "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n", 403, ReasonPrivateAddress, "10.0.0.1", "10.0.0.1:443"},
		{"IPv4-mapped private literal", "CONNECT [::ffff:10.0.0.1]:443 HTTP/1.1\r\n\r\n",
			403, ReasonPrivateAddress, "10.0.0.1", "10.0.0.1:443"},
		{"metadata address", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
			403, ReasonPrivateAddress, "169.254.169.254", "169.254.169.254:80"},
		{"IPv6 loopback", "CONNECT [::1]:443 HTTP/1.1\r\n\r\n", 403, ReasonPrivateAddress, "::1", "[::1]:443"},
		{"127.0.0.2 outside the /32 entry", "CONNECT 127.0.0.2:443 HTTP/1.1\r\n\r\n", 403, ReasonPrivateAddress, "127.0.0.2", "127.0.0.2:443"},
		{"public literal not allowlisted", "CONNECT 93.184.215.14:443 HTTP/1.1\r\n\r\n", 403, ReasonHostNotAllowlisted, "93.184.215.14", ""},
		{"port not allowed", "CONNECT api.allowed.test:22 HTTP/1.1\r\n\r\n", 403, ReasonPortNotAllowed, "api.allowed.test", ""},
		{"port not allowed, plain HTTP", "GET http://api.allowed.test:8080/ HTTP/1.1\r\n\r\n", 403, ReasonPortNotAllowed, "api.allowed.test", ""},
		{"resolve failure", "CONNECT fail.test:443 HTTP/1.1\r\n\r\n", 502, ReasonResolveFailed, "fail.test", ""},
		{"no addresses", "CONNECT empty.test:443 HTTP/1.1\r\n\r\n", 502, ReasonResolveFailed, "empty.test", ""},
		{"dial failure", fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", closed),
			502, ReasonDialFailed, "127.0.0.1", fmt.Sprintf("127.0.0.1:%d", closed)},
	}
	for _, tc := range cases {
		resp, body, rec := b.raw(t, tc.req)
		if resp.StatusCode != tc.status || resp.Header.Get(HeaderReason) != tc.reason || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: %s %s=%q body %q", tc.name, resp.Status, HeaderReason, resp.Header.Get(HeaderReason), body)
		}
		var addr string
		if rec.Addr.IsValid() {
			addr = rec.Addr.String()
		}
		if rec.Allowed || rec.Reason != tc.reason || rec.Host != tc.host || addr != tc.addr ||
			rec.End != EndRefused || rec.BytesUp != 0 || rec.BytesDown != 0 || rec.Detail == "" {
			t.Errorf("%s: record %+v", tc.name, rec)
		}
	}
	if len(dials) != 1 || dials[0] != fmt.Sprintf("127.0.0.1:%d", closed) {
		t.Errorf("dialled %v, want only the dial-failure case", dials)
	}
	if n := b.resolver.callsFor("other.test") + b.resolver.callsFor("evilcorp.local") + b.resolver.callsFor("corp.local"); n != 0 {
		t.Errorf("resolved %d names that are not allowlisted", n)
	}
	b.noMore(t)
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	cases := map[string]string{
		"garbage":                    "hello\r\n\r\n",
		"empty request line":         "\r\n\r\n",
		"origin-form":                "GET /index.html HTTP/1.1\r\nHost: api.allowed.test\r\n\r\n",
		"https absolute-form":        "GET https://api.allowed.test/ HTTP/1.1\r\nHost: api.allowed.test\r\n\r\n",
		"ftp absolute-form":          "GET ftp://api.allowed.test/ HTTP/1.1\r\n\r\n",
		"credentials in URL":         "GET http://u:p@api.allowed.test/ HTTP/1.1\r\n\r\n",
		"CONNECT without port":       "CONNECT api.allowed.test HTTP/1.1\r\n\r\n",
		"CONNECT with path":          "CONNECT /api.allowed.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT escaped host":       "CONNECT api%2eallowed.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT port out of range":  "CONNECT api.allowed.test:99999 HTTP/1.1\r\n\r\n",
		"CONNECT port not numeric":   "CONNECT api.allowed.test:https HTTP/1.1\r\n\r\n",
		"CONNECT port zero":          "CONNECT api.allowed.test:0 HTTP/1.1\r\n\r\n",
		"Host header disagrees":      "GET http://api.allowed.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		"Host header port disagrees": "GET http://api.allowed.test/ HTTP/1.1\r\nHost: api.allowed.test:8080\r\n\r\n",
		"CONNECT Host disagrees":     "CONNECT api.allowed.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n",
		"two Host headers":           "GET http://api.allowed.test/ HTTP/1.1\r\nHost: api.allowed.test\r\nHost: api.allowed.test\r\n\r\n",
		"numeric last label":         "CONNECT 127.1:443 HTTP/1.1\r\n\r\n",
		"hex last label":             "CONNECT 0x7f.0x1:443 HTTP/1.1\r\n\r\n",
		"zoned IPv6":                 "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",
		"underscore in name":         "CONNECT a_b.allowed.test:443 HTTP/1.1\r\n\r\n",
		"empty label":                "CONNECT api..allowed.test:443 HTTP/1.1\r\n\r\n",
		"HTTP/2 preface":             "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"HTTP/0.9 style":             "GET http://api.allowed.test/\r\n\r\n",
		"header without colon":       "GET http://api.allowed.test/ HTTP/1.1\r\nBogus\r\n\r\n",
		"oversized head":             "GET http://api.allowed.test/ HTTP/1.1\r\nX-Big: " + strings.Repeat("a", maxHeadBytes) + "\r\n\r\n",
		"bad content-length":         "POST http://api.allowed.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"non-ASCII host":             "CONNECT \u212aey.test:443 HTTP/1.1\r\n\r\n",
		"conflicting framing":        "POST http://api.allowed.test/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	}
	for name, req := range cases {
		resp, _, rec := b.raw(t, req)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderReason) != ReasonBadRequest {
			t.Errorf("%s: %s", name, resp.Status)
		}
		if rec.Allowed || rec.Reason != ReasonBadRequest || rec.End != EndRefused || rec.Detail == "" {
			t.Errorf("%s: record %+v", name, rec)
		}
	}
	for _, host := range []string{"api.allowed.test", "evil.test"} {
		if n := b.resolver.callsFor(host); n != 0 {
			t.Errorf("resolved %s %d times for bad requests", host, n)
		}
	}
	b.noMore(t)
}

func TestClientClosingWithoutRequestIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	c := b.dial(t)
	c.Close()
	rec := b.next(t)
	if rec.Reason != ReasonBadRequest || rec.Method != "" || rec.Allowed {
		t.Errorf("record %+v", rec)
	}
}

func TestRefusalWithUnreadBodyStillAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	body := strings.Repeat("x", 1<<20)
	c := b.dial(t)
	go fmt.Fprintf(c, "POST http://other.test/ HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %s", resp.Status)
	}
	c.Close()
	if rec := b.next(t); rec.Reason != ReasonHostNotAllowlisted {
		t.Errorf("record %+v", rec)
	}
}

func TestNilAllowlistAllowsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Allow = nil }})
	start := time.Now()
	resp, _, rec := b.raw(t, "CONNECT api.allowed.test:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || rec.Reason != ReasonHostNotAllowlisted {
		t.Errorf("%s, record %+v", resp.Status, rec)
	}
	if rec.Started.Before(start.Add(-time.Second)) || rec.Ended.Before(rec.Started) {
		t.Errorf("times %v..%v", rec.Started, rec.Ended)
	}
}
