package egress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMaxBytesDownload(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	port := tcpServer(t, func(c net.Conn) {
		c.Write(bytes.Repeat([]byte("d"), 1<<20))
	})
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port}; c.MaxBytes = limit }})
	c, br := b.connect(t, "api.allowed.test", port)
	got, _ := io.Copy(io.Discard, br)
	c.Close()
	rec := b.next(t)
	if got > limit || rec.End != EndMaxBytes || rec.BytesDown != limit || rec.BytesUp != 0 {
		t.Errorf("client got %d bytes; record %+v", got, rec)
	}
}

func TestMaxBytesUpload(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	port := tcpServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port}; c.MaxBytes = limit }})
	c, _ := b.connect(t, "api.allowed.test", port)
	var sent int
	chunk := bytes.Repeat([]byte("u"), 4096)
	for sent < 4<<20 {
		n, err := c.Write(chunk)
		sent += n
		if err != nil {
			break
		}
	}
	c.Close()
	rec := b.next(t)
	if rec.End != EndMaxBytes || rec.BytesUp != limit || rec.BytesDown != 0 {
		t.Errorf("sent %d; record %+v", sent, rec)
	}
}

func TestMaxBytesForwardedResponse(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("r"), 1<<20))
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port}; c.MaxBytes = limit }})
	resp, err := b.client(nil).Get(fmt.Sprintf("http://api.allowed.test:%d/", port))
	if err == nil {
		n, rerr := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if rerr == nil || n >= 1<<20 {
			t.Errorf("read %d bytes without error", n)
		}
	}
	rec := b.next(t)
	if rec.End != EndMaxBytes || rec.BytesUp+rec.BytesDown != limit {
		t.Errorf("record %+v", rec)
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	port := tcpServer(t, func(c net.Conn) { <-hold })
	defer close(hold)
	b := setup(t, setupOpts{cfg: func(c *Config) { c.Ports = []int{port}; c.IdleTimeout = 150 * time.Millisecond }})
	c, br := b.connect(t, "api.allowed.test", port)
	// The read ends when the proxy closes; should it never, the
	// connection's waitTimeout deadline ends it and the record says why.
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("read a byte from a silent destination")
	}
	c.Close()
	if rec := b.next(t); rec.End != EndIdleTimeout || !rec.Allowed {
		t.Errorf("record %+v", rec)
	}
}

func TestActivityDefersIdleTimeoutUntilMaxDuration(t *testing.T) {
	t.Parallel()
	port := tcpServer(t, func(c net.Conn) { io.Copy(c, c) })
	// A ping every 50 ms keeps a connection with an idle timeout of a
	// second alive, even on a busy machine, until its maximum duration.
	const idle, maxDur = time.Second, 3 * time.Second
	b := setup(t, setupOpts{cfg: func(c *Config) {
		c.Ports = []int{port}
		c.IdleTimeout, c.MaxDuration = idle, maxDur
	}})
	start := time.Now()
	c, br := b.connect(t, "api.allowed.test", port)
	buf := make([]byte, 4)
	var err error
	for err == nil {
		if _, err = io.WriteString(c, "ping"); err == nil {
			_, err = io.ReadFull(br, buf)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := time.Since(start); d < maxDur-50*time.Millisecond {
		t.Errorf("closed after %v, before its maximum duration %v", d, maxDur)
	}
	c.Close()
	if rec := b.next(t); rec.End != EndMaxDuration || rec.BytesUp < 4*int64(maxDur/idle) {
		t.Errorf("record %+v", rec)
	}
}

func TestRequestHeadMustArriveWithinIdleTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *Config) { c.IdleTimeout = 150 * time.Millisecond }})
	c := b.dial(t)
	io.WriteString(c, "GET http://api.allowed.test/ HTTP/1.1\r\nX-Slow: ")
	// The read only waits for the proxy to close: a busy machine may have
	// it close with the head's bytes unread, which resets the connection.
	// The record says why it ended.
	_, _ = io.ReadAll(c)
	rec := b.next(t)
	if rec.Reason != ReasonBadRequest || rec.End != EndIdleTimeout {
		t.Errorf("record %+v", rec)
	}
}

func TestMaxDurationCoversSlowDial(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *Config) {
		c.MaxDuration = 150 * time.Millisecond
		c.DialTimeout = time.Minute
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}})
	c := b.dial(t)
	io.WriteString(c, "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n")
	body, _ := io.ReadAll(c)
	rec := b.next(t)
	if rec.Reason != ReasonDialFailed || rec.End != EndMaxDuration || strings.Contains(string(body), "200") {
		t.Errorf("got %q; record %+v", body, rec)
	}
}
