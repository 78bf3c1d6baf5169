package egress

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// Bridge accepts connections on ln and relays each, byte for byte, to a new
// connection to the Unix socket at socketPath, until ctx ends; it then
// closes ln and every open connection and returns nil.
//
// It is the in-sandbox half of tier C egress: run inside the sandbox's
// loopback-only network namespace with ln on 127.0.0.1:<port> and
// socketPath the bind-mounted proxy socket, it lets ordinary clients use
// http_proxy=http://127.0.0.1:<port>. It enforces nothing; the Proxy on the
// other end of the socket decides and limits.
func Bridge(ctx context.Context, ln net.Listener, socketPath string) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	var d net.Dialer
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("egress: bridge accept: %w", err)
		}
		wg.Go(func() { bridgeOne(ctx, &d, c, socketPath) })
	}
}

func bridgeOne(ctx context.Context, d *net.Dialer, c net.Conn, socketPath string) {
	defer c.Close()
	up, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() {
		c.Close()
		up.Close()
	})
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- relay(up, c) }()
	go func() { errc <- relay(c, up) }()
	for range 2 {
		if err := <-errc; err != nil {
			c.Close()
			up.Close()
		}
	}
}
