package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

func TestBridgeRelaysToUnixSocket(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{unix: true, cfg: func(c *Config) { c.Ports = []int{port} }})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- Bridge(ctx, ln, b.addr) }()

	client := &http.Client{Timeout: waitTimeout, Transport: &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()}),
		DisableKeepAlives: true,
	}}
	resp, err := client.Get(fmt.Sprintf("http://api.allowed.test:%d/via-bridge", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if e := decodeEcho(t, string(body)); e.URI != "/via-bridge" {
		t.Errorf("destination saw %q", e.URI)
	}
	if rec := b.next(t); !rec.Allowed {
		t.Errorf("record %+v", rec)
	}

	resp, err = client.Get("http://denied.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("denied host through bridge: %s", resp.Status)
	}
	b.next(t)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Bridge = %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Bridge did not return")
	}
}
