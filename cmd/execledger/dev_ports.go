package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/execledger/execledger/internal/config"
)

// devListeners binds dev's HTTP ports (serve.listen, and console.listen
// with the console) before dev prints its banner, so that a port in use
// is found before dev says it serves, not after. A default port in use (a
// second dev in another directory) is replaced by a free one on the same
// host, as the embedded PostgreSQL's is; a port the configuration names
// is an error. cfg gets the addresses bound; notes say what moved.
func devListeners(cfg *config.Config, def config.Config) (ops, con net.Listener, notes []string, err error) {
	if cfg.Serve.Listen != "" {
		if ops, err = listenOrMove(&cfg.Serve.Listen, def.Serve.Listen, "serve.listen", "EXECLEDGER_SERVE_LISTEN", &notes); err != nil {
			return nil, nil, nil, err
		}
	}
	if cfg.Console.Enabled {
		if con, err = listenOrMove(&cfg.Console.Listen, def.Console.Listen, "console.listen", "EXECLEDGER_CONSOLE_LISTEN", &notes); err != nil {
			if ops != nil {
				ops.Close()
			}
			return nil, nil, nil, err
		}
	}
	return ops, con, notes, nil
}

// listenOrMove binds *addr, or, when *addr is def and in use, a free port
// on its host; *addr becomes the address bound.
func listenOrMove(addr *string, def, key, env string, notes *[]string) (net.Listener, error) {
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		*addr = ln.Addr().String()
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) || *addr != def {
		return nil, fmt.Errorf("%s: %w (another execledger dev or serve? set %s to a free host:port, or port 0 for any)", key, err, env)
	}
	host, _, _ := net.SplitHostPort(*addr)
	if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	*notes = append(*notes, fmt.Sprintf("%s %s is in use (another execledger?), took %s", key, *addr, ln.Addr()))
	*addr = ln.Addr().String()
	return ln, nil
}

func closeListeners(lns ...net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			_ = ln.Close() // closed already when serve used it
		}
	}
}

// printDevPorts says, after dev's banner, where it listens and which
// default port it had to leave.
func printDevPorts(e *env, cfg config.Config, notes []string) {
	var parts []string
	if u, err := url.Parse(cfg.Database.URL); err == nil && u.Port() != "" {
		parts = append(parts, "PostgreSQL "+u.Host)
	}
	if cfg.Serve.Listen != "" {
		parts = append(parts, "metrics http://"+cfg.Serve.Listen+"/metrics")
	}
	if cfg.Console.Enabled {
		parts = append(parts, "console "+cfg.Console.Listen)
	}
	fmt.Fprintf(e.io.out, "Ports: %s\n", strings.Join(parts, ", "))
	for _, n := range notes {
		fmt.Fprintf(e.io.out, "  %s\n", n)
	}
}
