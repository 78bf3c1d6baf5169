package egress

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// session is the state of one client connection from accept to report.
// The handler goroutine owns rec; the watchdog and the meters share the
// rest through atomics and mu.
type session struct {
	cfg    *Config
	client net.Conn
	ctx    context.Context // canceled when the session is aborted
	cancel context.CancelFunc
	start  time.Time

	lastActive atomic.Int64 // time.Duration since start of the last byte moved
	used       atomic.Int64 // bytes reserved against cfg.MaxBytes
	up, down   atomic.Int64

	mu       sync.Mutex
	upstream net.Conn
	end      string // first cause wins
	closed   bool

	done      chan struct{} // closed by finish to stop the watchdog
	watchDone chan struct{}

	rec Connection
}

func newSession(parent context.Context, cfg *Config, client net.Conn) *session {
	ctx, cancel := context.WithCancel(parent)
	s := &session{
		cfg: cfg, client: client, ctx: ctx, cancel: cancel, start: time.Now(),
		done: make(chan struct{}), watchDone: make(chan struct{}),
	}
	s.rec.Started = s.start
	go s.watch(parent)
	return s
}

// watch enforces IdleTimeout and MaxDuration and closes the session when
// Serve's context ends.
func (s *session) watch(parent context.Context) {
	defer close(s.watchDone)
	_, wait := s.check()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-parent.Done():
			s.abort(EndShutdown)
			return
		case <-t.C:
			cause, wait := s.check()
			if cause != "" {
				s.abort(cause)
				return
			}
			t.Reset(wait)
		}
	}
}

// check returns the limit the session has run into, or how long until the
// next one could be reached.
func (s *session) check() (string, time.Duration) {
	elapsed := time.Since(s.start)
	idle := elapsed - time.Duration(s.lastActive.Load())
	switch {
	case elapsed >= s.cfg.MaxDuration:
		return EndMaxDuration, 0
	case idle >= s.cfg.IdleTimeout:
		return EndIdleTimeout, 0
	}
	return "", min(s.cfg.MaxDuration-elapsed, s.cfg.IdleTimeout-idle)
}

func (s *session) touch() {
	s.lastActive.Store(int64(time.Since(s.start)))
}

// setEnd records why the session ends unless a cause is already recorded.
func (s *session) setEnd(cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end == "" {
		s.end = cause
	}
}

// abort records cause (unless one is recorded) and closes both connections,
// unblocking every reader and writer, and cancels pending resolution/dials.
// It reports whether cause is the one recorded.
func (s *session) abort(cause string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.end == ""
	if first {
		s.end = cause
	}
	s.closeLocked()
	return first
}

func (s *session) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	s.client.Close()
	if s.upstream != nil {
		s.upstream.Close()
	}
}

// attach registers the destination connection so abort closes it too. It
// reports false (and closes c) when the session is already closed.
func (s *session) attach(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.upstream = c
	return true
}

// finish stops the watchdog, closes everything and reports the connection.
func (s *session) finish() {
	close(s.done)
	<-s.watchDone
	s.mu.Lock()
	if s.end == "" {
		s.end = EndClosed
	}
	s.closeLocked()
	s.rec.End = s.end
	s.mu.Unlock()
	s.rec.BytesUp, s.rec.BytesDown = s.up.Load(), s.down.Load()
	s.rec.Ended = time.Now()
	if s.cfg.OnConnection != nil {
		s.cfg.OnConnection(s.rec)
	}
}
