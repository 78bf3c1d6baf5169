package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestConnectTLSOverUnixSocket(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{unix: true, cfg: func(c *Config) { c.Ports = []int{port} }})

	client := b.client(tlsConfigFor(srv))
	resp, err := client.Get(fmt.Sprintf("https://api.allowed.test:%d/x", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if want := fmt.Sprintf("hello api.allowed.test:%d /x", port); string(body) != want {
		t.Errorf("body = %q, want %q", body, want)
	}

	rec := b.next(t)
	want := Connection{Method: "CONNECT", Host: "api.allowed.test", Port: port,
		Addr: netip.AddrPortFrom(loopback, uint16(port)), Allowed: true, Reason: ReasonAllowed, End: EndClosed}
	assertRecord(t, rec, want)
	if rec.BytesUp == 0 || rec.BytesDown == 0 {
		t.Errorf("bytes up/down = %d/%d, want both > 0", rec.BytesUp, rec.BytesDown)
	}
	if rec.Started.IsZero() || rec.Ended.Before(rec.Started) {
		t.Errorf("Started %v, Ended %v", rec.Started, rec.Ended)
	}
	b.noMore(t)
}

// assertRecord compares the fields that do not vary between runs.
func assertRecord(t *testing.T, got, want Connection) {
	t.Helper()
	got.BytesUp, got.BytesDown, got.Started, got.Ended, got.Detail = 0, 0, want.Started, want.Ended, ""
	if got != want {
		t.Errorf("record = %+v\nwant     %+v", got, want)
	}
}

// echoHandler reports what the destination received.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Proxy-Resp", "strip me")
	w.Header().Set("X-Resp", "keep")
	json.NewEncoder(w).Encode(map[string]any{
		"method": r.Method, "uri": r.RequestURI, "host": r.Host,
		"header": r.Header, "body": string(body), "te": r.TransferEncoding,
	})
}

type echoed struct {
	Method, URI, Host, Body string
	Header                  http.Header
	TE                      []string
}

func decodeEcho(t *testing.T, body string) echoed {
	t.Helper()
	var e echoed
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
	return e
}

func TestForwardPlainHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port} }})

	resp, body, rec := b.raw(t, fmt.Sprintf("GET http://API.Allowed.Test.:%d/path?q=1 HTTP/1.1\r\n"+
		"Host: api.allowed.test:%d\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Foo: 1\r\n"+
		"Connection: keep-alive, X-Hop\r\nX-Hop: secret\r\nKeep-Alive: 300\r\nUpgrade: websocket\r\n"+
		"TE: trailers\r\nX-Keep: yes\r\n\r\n", port, port))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, body)
	}
	e := decodeEcho(t, body)
	if e.Method != "GET" || e.URI != "/path?q=1" || e.Host != fmt.Sprintf("api.allowed.test:%d", port) {
		t.Errorf("destination saw %s %s Host %s", e.Method, e.URI, e.Host)
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Foo", "X-Hop", "Keep-Alive", "Upgrade", "Te", "User-Agent"} {
		if v, ok := e.Header[h]; ok {
			t.Errorf("header %s forwarded: %q", h, v)
		}
	}
	if e.Header.Get("X-Keep") != "yes" {
		t.Errorf("X-Keep not forwarded: %v", e.Header)
	}
	if resp.Header.Get("Proxy-Resp") != "" || resp.Header.Get("X-Resp") != "keep" || !resp.Close {
		t.Errorf("response headers %v (Close %v)", resp.Header, resp.Close)
	}
	assertRecord(t, rec, Connection{Method: "GET", Host: "api.allowed.test", Port: port,
		Addr: netip.AddrPortFrom(loopback, uint16(port)), Allowed: true, Reason: ReasonAllowed, End: EndClosed})
	if rec.BytesUp == 0 || rec.BytesDown < int64(len(body)) {
		t.Errorf("bytes up/down = %d/%d, body %d", rec.BytesUp, rec.BytesDown, len(body))
	}
}

func TestForwardRequestBodies(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port} }})
	url := fmt.Sprintf("http://api.allowed.test:%d/upload", port)

	t.Run("content-length via http.Client", func(t *testing.T) {
		resp, err := b.client(nil).Post(url, "text/plain", strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if e := decodeEcho(t, string(body)); e.Method != "POST" || e.Body != "payload" {
			t.Errorf("destination saw %s body %q", e.Method, e.Body)
		}
		if rec := b.next(t); !rec.Allowed || rec.BytesUp < int64(len("payload")) {
			t.Errorf("record %+v", rec)
		}
	})
	t.Run("chunked with expect 100-continue", func(t *testing.T) {
		c := b.dial(t)
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: api.allowed.test:%d\r\nTransfer-Encoding: chunked\r\n"+
			"Expect: 100-continue\r\n\r\n", url, port)
		buf := make([]byte, len("HTTP/1.1 100 Continue\r\n\r\n"))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "HTTP/1.1 100 Continue\r\n\r\n" {
			t.Fatalf("interim response %q, %v", buf, err)
		}
		io.WriteString(c, "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
		body, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		_, after, _ := strings.Cut(string(body), "\r\n\r\n")
		if !strings.HasPrefix(string(body), "HTTP/1.1 200 OK") || !strings.Contains(after, `"body":"abcde"`) {
			t.Errorf("response %q", body)
		}
		b.next(t)
	})
}

func TestPrivateAddressAllowedByCIDR(t *testing.T) {
	t.Parallel()
	var pd pipeDialer
	b := setup(t, setupOpts{allow: []string{"evil.test", "10.0.0.0/8"}, cfg: func(c *Config) { c.Dial = pd.Dial }})

	for _, target := range []string{"evil.test", "10.0.0.1"} {
		resp, body, rec := b.raw(t, "GET http://"+target+"/ HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		if resp.StatusCode != http.StatusOK || body != "ok" {
			t.Errorf("%s: %s %q", target, resp.Status, body)
		}
		assertRecord(t, rec, Connection{Method: "GET", Host: target, Port: 80,
			Addr: netip.AddrPortFrom(privAddr, 80), Allowed: true, Reason: ReasonAllowed, End: EndClosed})
	}
	if got := pd.addrs(); len(got) != 2 || got[0] != "10.0.0.1:80" || got[1] != "10.0.0.1:80" {
		t.Errorf("dialled %v", got)
	}
}

func TestPrivateRangesAdmitResolvedAddressesOnly(t *testing.T) {
	t.Parallel()
	var pd pipeDialer
	b := setup(t, setupOpts{allow: []string{"evil.test", "api.allowed.test"}, cfg: func(c *Config) {
		c.Dial = pd.Dial
		c.PrivateRanges = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::ffff:127.0.0.1/128")}
	}})
	// A listed name that resolves into a private range is admitted, and
	// so is one that resolves to loopback (the IPv4-mapped range is
	// unmapped).
	for _, host := range []string{"evil.test", "api.allowed.test"} {
		resp, body, rec := b.raw(t, "GET http://"+host+"/ HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		if resp.StatusCode != http.StatusOK || body != "ok" || !rec.Allowed {
			t.Errorf("%s: %s %q, record %+v", host, resp.Status, body, rec)
		}
	}
	// The ranges allowlist nothing: a literal in them is not a listed host.
	resp, _, rec := b.raw(t, "GET http://10.0.0.1/ HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || rec.Reason != ReasonHostNotAllowlisted {
		t.Errorf("literal in a private range: %s, record %+v", resp.Status, rec)
	}
	// A special literal outside them is refused as private.
	resp, _, rec = b.raw(t, "GET http://192.168.1.1/ HTTP/1.1\r\nHost: 192.168.1.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || rec.Reason != ReasonPrivateAddress {
		t.Errorf("special literal: %s, record %+v", resp.Status, rec)
	}
	if got := pd.addrs(); len(got) != 2 || got[0] != "10.0.0.1:80" || got[1] != "127.0.0.1:80" {
		t.Errorf("dialled %v", got)
	}
}

func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	var pd pipeDialer
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Dial = pd.Dial }})
	b.resolver.set("rebind.test", []netip.Addr{publicAddr}, []netip.Addr{privAddr})

	resp, body, rec := b.raw(t, "GET http://rebind.test/ HTTP/1.1\r\nHost: rebind.test\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("%s %q", resp.Status, body)
	}
	if n := b.resolver.callsFor("rebind.test"); n != 1 {
		t.Errorf("resolver asked %d times, want 1", n)
	}
	want := netip.AddrPortFrom(publicAddr, 80)
	if got := pd.addrs(); len(got) != 1 || got[0] != want.String() {
		t.Errorf("dialled %v, want exactly the checked %s", got, want)
	}
	if rec.Addr != want || !rec.Allowed {
		t.Errorf("record %+v", rec)
	}

	// The next connection resolves afresh and sees the private answer.
	resp, _, rec = b.raw(t, "CONNECT rebind.test:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || rec.Reason != ReasonPrivateAddress || rec.Addr != netip.AddrPortFrom(privAddr, 443) {
		t.Errorf("second attempt: %s, record %+v", resp.Status, rec)
	}
	if n := len(pd.addrs()); n != 1 {
		t.Errorf("dialled %d times, want 1", n)
	}
}

func TestResolverAnswerWithAnyPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	var pd pipeDialer
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Dial = pd.Dial }})
	b.resolver.set("rebind.test", []netip.Addr{publicAddr, netip.MustParseAddr("::ffff:169.254.169.254")})
	resp, _, rec := b.raw(t, "CONNECT rebind.test:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || rec.Reason != ReasonPrivateAddress {
		t.Errorf("%s, record %+v", resp.Status, rec)
	}
	if rec.Addr.Addr() != netip.MustParseAddr("169.254.169.254") {
		t.Errorf("refused address %s", rec.Addr)
	}
	if got := pd.addrs(); len(got) != 0 {
		t.Errorf("dialled %v", got)
	}
}

func TestDialTriesEveryCheckedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	port := portOf(t, srv.URL)
	var tried []string
	b := setup(t, setupOpts{allow: []string{"api.allowed.test", "127.0.0.0/8"}, cfg: func(c *Config) {
		c.Ports = []int{port}
		dial := loopbackDial(t)
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			tried = append(tried, addr)
			if strings.HasPrefix(addr, "127.0.0.2:") {
				return nil, errors.New("refused (test)")
			}
			return dial(ctx, network, addr)
		}
	}})
	b.resolver.set("api.allowed.test", []netip.Addr{netip.MustParseAddr("127.0.0.2"), loopback})
	resp, _, rec := b.raw(t, fmt.Sprintf("GET http://api.allowed.test:%d/ HTTP/1.1\r\n\r\n", port))
	if resp.StatusCode != http.StatusOK || rec.Addr != netip.AddrPortFrom(loopback, uint16(port)) {
		t.Errorf("%s, record %+v", resp.Status, rec)
	}
	if len(tried) != 2 {
		t.Errorf("tried %v", tried)
	}
}

func TestConnectPropagatesHalfClose(t *testing.T) {
	t.Parallel()
	port := tcpServer(t, func(c net.Conn) {
		got, _ := io.ReadAll(c) // until the client's half-close arrives
		fmt.Fprintf(c, "got %s", got)
	})
	b := setup(t, setupOpts{unix: true, cfg: func(c *Config) { c.Ports = []int{port} }})
	c, br := b.connect(t, "api.allowed.test", port)
	io.WriteString(c, "hello")
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(br)
	if err != nil || string(reply) != "got hello" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	c.Close()
	if rec := b.next(t); rec.End != EndClosed || rec.BytesUp != 5 || rec.BytesDown != 9 {
		t.Errorf("record %+v", rec)
	}
}
