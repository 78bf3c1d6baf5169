package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Tests contact only 127.0.0.1 and Unix sockets. Names resolve through
// fakeResolver, and every dial goes through a Dial hook that refuses any
// non-loopback address (tests that "reach" public or private addresses use
// in-memory pipes instead).

// waitTimeout bounds every wait for what a test expects (a record, a
// reply, Serve returning): a hang fails the test, a machine busy with
// other work only makes it slower.
const waitTimeout = 2 * time.Minute

var (
	loopback = netip.MustParseAddr("127.0.0.1")
	// publicAddr is never contacted: tests dialling it use pipeDialer.
	publicAddr = netip.MustParseAddr("93.184.215.14")
	privAddr   = netip.MustParseAddr("10.0.0.1")
)

// fakeResolver answers from a table. Each host has a sequence of answers;
// the last repeats. Unknown hosts fail, so no real lookup ever happens.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{
		answers: map[string][][]netip.Addr{
			"api.allowed.test": {{loopback}},
			"api.corp.local":   {{loopback}},
			"evilcorp.local":   {{loopback}},
			"evil.test":        {{privAddr}},
			"empty.test":       {{}},
		},
		calls: map[string]int{},
	}
}

func (r *fakeResolver) set(host string, answers ...[]netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[host] = answers
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.calls[host]
	r.calls[host]++
	seq, ok := r.answers[host]
	if !ok || len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host (fake resolver)", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), seq[min(n, len(seq)-1)]...), nil
}

func (r *fakeResolver) callsFor(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// loopbackDial is the default test Dial: real TCP, loopback only.
func loopbackDial(t testing.TB) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("Dial(%q): tests may only dial loopback IP literals", addr)
			return nil, errors.New("test dial refused")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// pipeDialer answers every dial with an in-memory HTTP server that replies
// "ok" to one request, and records the addresses dialled.
type pipeDialer struct {
	mu     sync.Mutex
	dialed []string
}

func (p *pipeDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p.mu.Lock()
	p.dialed = append(p.dialed, addr)
	p.mu.Unlock()
	server, client := net.Pipe()
	go func() {
		defer server.Close()
		req, err := http.ReadRequest(bufio.NewReader(server))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(server, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}()
	return client, nil
}

func (p *pipeDialer) addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dialed...)
}

// bundle is a running proxy and what tests need to drive it.
type bundle struct {
	proxy    *Proxy
	resolver *fakeResolver
	network  string
	addr     string
	cancel   context.CancelFunc
	served   chan error
	records  chan Connection

	mu  sync.Mutex
	all []Connection
}

type setupOpts struct {
	unix  bool
	allow []string
	cfg   func(*Config)
}

var defaultAllow = []string{"api.allowed.test", ".corp.local", "evil.test", "empty.test", "fail.test", "rebind.test", "127.0.0.1/32"}

func setup(t *testing.T, o setupOpts) *bundle {
	t.Helper()
	if o.allow == nil {
		o.allow = defaultAllow
	}
	allow, err := ParseAllowlist(o.allow)
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{resolver: newFakeResolver(), served: make(chan error, 1), records: make(chan Connection, 1024)}
	cfg := Config{
		Allow:       allow,
		Resolver:    b.resolver,
		Dial:        loopbackDial(t),
		DialTimeout: 2 * time.Second,
		OnConnection: func(c Connection) {
			b.mu.Lock()
			b.all = append(b.all, c)
			b.mu.Unlock()
			b.records <- c
		},
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	b.proxy, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if o.unix {
		ln, err = b.proxy.ListenUnix(filepath.Join(t.TempDir(), "egress.sock"))
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	b.network, b.addr = ln.Addr().Network(), ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	b.cancel = cancel
	go func() { b.served <- b.proxy.Serve(ctx, ln) }()
	t.Cleanup(func() { b.stop(t) })
	return b
}

// stop cancels Serve and waits for it; safe to call twice.
func (b *bundle) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	select {
	case err, ok := <-b.served:
		if ok && err != nil {
			t.Errorf("Serve: %v", err)
		}
		if ok {
			close(b.served)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Serve did not return after cancel")
	}
}

func (b *bundle) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(b.network, b.addr, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(waitTimeout))
	return c
}

// next returns the next OnConnection record.
func (b *bundle) next(t *testing.T) Connection {
	t.Helper()
	select {
	case c := <-b.records:
		return c
	case <-time.After(waitTimeout):
		t.Fatal("no OnConnection record")
		return Connection{}
	}
}

// noMore asserts no further record arrives shortly.
func (b *bundle) noMore(t *testing.T) {
	t.Helper()
	select {
	case c := <-b.records:
		t.Errorf("unexpected extra record %+v", c)
	case <-time.After(50 * time.Millisecond):
	}
}

func (b *bundle) recorded() []Connection {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Connection(nil), b.all...)
}

// client is an http.Client that uses the proxy for every request.
func (b *bundle) client(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Timeout: waitTimeout,
		Transport: &http.Transport{
			Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress.invalid"}),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, b.network, b.addr)
			},
			TLSClientConfig:   tlsConfig,
			DisableKeepAlives: true,
		},
	}
}

// raw sends a raw request head and returns the proxy's response and the
// record of the attempt. The connection is closed before the record is read.
func (b *bundle) raw(t *testing.T, req string) (*http.Response, string, Connection) {
	t.Helper()
	c := b.dial(t)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading response to %q: %v", req, err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	return resp, string(body), b.next(t)
}

// portOf returns the port of a 127.0.0.1 URL or address.
func portOf(t testing.TB, s string) int {
	t.Helper()
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Host
	}
	_, p, err := net.SplitHostPort(s)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tlsConfigFor trusts srv's certificate (issued for example.com).
func tlsConfigFor(srv *httptest.Server) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: pool, ServerName: "example.com"}
}

// tcpServer runs handle for every connection accepted on 127.0.0.1.
func tcpServer(t *testing.T, handle func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	accepting := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-accepting // no wg.Go may race with wg.Wait
		wg.Wait()
	})
	go func() {
		defer close(accepting)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	}()
	return portOf(t, ln.Addr().String())
}

// connect opens a CONNECT tunnel through the proxy to host:port and returns
// the connection positioned after the proxy's 200.
func (b *bundle) connect(t *testing.T, host string, port int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := b.dial(t)
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hp, hp)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %s", hp, resp.Status)
	}
	return c, br
}
