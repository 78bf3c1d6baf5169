package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/execledger/execledger/internal/retry"
)

// Proxy is the allowlisting egress proxy. It is safe for concurrent use;
// one Proxy may serve several listeners.
type Proxy struct {
	cfg Config
}

// New returns a Proxy for cfg after applying defaults and validating it.
func New(cfg Config) (*Proxy, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Proxy{cfg: cfg}, nil
}

func (p *Proxy) portAllowed(port int) bool {
	return slices.Contains(p.cfg.Ports, port)
}

// Serve accepts connections on ln and proxies each until ctx ends or
// accepting fails for good (the listener was closed by someone else). It
// then closes ln and every open connection (recorded with EndShutdown) and
// waits for their handlers, so every OnConnection call has returned when
// Serve does. It returns nil when ctx ended.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()

	slots := make(chan struct{}, p.cfg.MaxConns)
	var delay time.Duration
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		c, err := ln.Accept()
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("egress: accept: %w", err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			p.cfg.Logger.WarnContext(ctx, "egress: accept failed; retrying", "err", err, "delay", delay)
			if !retry.Sleep(ctx, delay) {
				return nil
			}
			continue
		}
		delay = 0
		wg.Go(func() {
			defer func() { <-slots }()
			p.handle(ctx, c)
		})
	}
}

// handle serves one client connection and reports it.
func (p *Proxy) handle(ctx context.Context, c net.Conn) {
	s := newSession(ctx, &p.cfg, c)
	defer s.finish()
	s.run(p)
}
