package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestServeShutdownClosesConnections(t *testing.T) {
	t.Parallel()
	port := tcpServer(t, func(c net.Conn) { io.Copy(c, c) })
	b := setup(t, setupOpts{unix: true, cfg: func(c *Config) { c.Ports = []int{port} }})
	c, br := b.connect(t, "api.allowed.test", port)
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q, %v", buf, err)
	}

	b.stop(t) // returns only after every handler reported
	select {
	case rec := <-b.records:
		if rec.End != EndShutdown || !rec.Allowed || rec.BytesUp != 4 || rec.BytesDown != 4 {
			t.Errorf("record %+v", rec)
		}
	default:
		t.Fatal("Serve returned before the open connection was reported")
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("tunnel still open after Serve returned")
	}
	if _, err := os.Stat(b.addr); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Serve: %v", err)
	}
}

func TestServeWithCanceledContextReturnsAtOnce(t *testing.T) {
	t.Parallel()
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Serve(ctx, ln); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("listener not closed: %v", err)
	}
}

func TestServeReturnsErrorWhenListenerClosedUnderIt(t *testing.T) {
	t.Parallel()
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- p.Serve(t.Context(), ln) }()
	time.Sleep(20 * time.Millisecond)
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Serve did not return")
	}
}

func TestConcurrentClients(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port, 80}; c.MaxConns = 8 }})
	const workers, each = 16, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			client := b.client(nil)
			for i := range each {
				url := fmt.Sprintf("http://api.allowed.test:%d/w%d/%d", port, w, i)
				if i%4 == 3 {
					url = "http://denied.test/"
				}
				resp, err := client.Get(url)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	// The client has its whole response before the proxy has recorded the
	// connection's end: wait for every record, then stop.
	for deadline := time.Now().Add(waitTimeout); len(b.recorded()) < workers*each && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	b.stop(t)
	recs := b.recorded()
	var allowed, denied int
	for _, r := range recs {
		switch {
		case r.Allowed && r.Reason == ReasonAllowed && r.End == EndClosed:
			allowed++
		case r.Reason == ReasonHostNotAllowlisted:
			denied++
		default:
			t.Errorf("record %+v", r)
		}
	}
	if allowed != workers*each*3/4 || denied != workers*each/4 {
		t.Errorf("allowed %d, denied %d, records %d", allowed, denied, len(recs))
	}
}

func TestOnConnectionOncePerAttempt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port} }})
	attempts := []string{
		fmt.Sprintf("GET http://api.allowed.test:%d/ HTTP/1.1\r\n\r\n", port),
		"CONNECT evil.test:443 HTTP/1.1\r\n\r\n",
		"nonsense\r\n\r\n",
		"",
		fmt.Sprintf("GET http://api.allowed.test:%d/again HTTP/1.1\r\n\r\n", port),
	}
	for _, a := range attempts {
		c := b.dial(t)
		io.WriteString(c, a)
		if a != "" {
			io.ReadAll(c)
		}
		c.Close()
	}
	b.stop(t)
	recs := b.recorded()
	if len(recs) != len(attempts) {
		t.Fatalf("%d records for %d attempts: %+v", len(recs), len(attempts), recs)
	}
	for _, r := range recs {
		if r.Allowed && (r.BytesUp == 0 || r.BytesDown == 0) {
			t.Errorf("allowed record without byte counts: %+v", r)
		}
		if !r.Allowed && (r.BytesUp != 0 || r.BytesDown != 0) {
			t.Errorf("refused record with byte counts: %+v", r)
		}
	}
}

func TestListenUnix(t *testing.T) {
	t.Parallel()
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "egress.sock")

	ln, err := p.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o666 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("socket mode %v, %v", fi.Mode(), err)
	}
	if _, err := p.ListenUnix(path); !errors.Is(err, ErrSocketInUse) {
		t.Errorf("second listener on a live socket: %v", err)
	}

	// Leave a stale socket behind, as a crashed proxy would.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket missing: %v", err)
	}
	ln, err = p.ListenUnix(path)
	if err != nil {
		t.Fatalf("replacing a stale socket: %v", err)
	}
	ln.Close()

	file := filepath.Join(dir, "not-a-socket")
	os.WriteFile(file, []byte("keep"), 0o600)
	if _, err := p.ListenUnix(file); !errors.Is(err, ErrSocketInUse) {
		t.Errorf("regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("regular file was touched")
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{Ports: []int{0}},
		{Ports: []int{65536}},
		{DialTimeout: -1},
		{IdleTimeout: -1},
		{MaxDuration: -1},
		{MaxBytes: -1},
		{MaxConns: -1},
		{PrivateRanges: []netip.Prefix{{}}},
		{PrivateRanges: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}},
	}
	for _, cfg := range bad {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v", cfg, err)
		}
	}
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := p.cfg
	if !p.portAllowed(80) || !p.portAllowed(443) || p.portAllowed(8080) || c.DialTimeout != DefaultDialTimeout ||
		c.IdleTimeout != DefaultIdleTimeout || c.MaxDuration != DefaultMaxDuration || c.MaxBytes != DefaultMaxBytes ||
		c.MaxConns != DefaultMaxConns || c.Resolver != net.DefaultResolver {
		t.Errorf("defaults %+v", c)
	}
}
