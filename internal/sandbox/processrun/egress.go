//go:build linux

package processrun

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// Tier C's strict egress.
const (
	// bridgeAddr is where, inside the sandbox's own network namespace, the
	// init's bridge to the egress proxy listens.
	bridgeAddr = "127.0.0.1:3128"
	// maxEgressEvents bounds the egress.connection events of one call;
	// past it connections are only counted (egress_events_dropped), so a
	// chatty program cannot push the call past the executor's event cap.
	maxEgressEvents = 500
)

// proxyVars are the environment variables that point clients at the
// bridge. curl reads only the lower-case http_proxy; NO_PROXY is set empty
// so that no host bypasses the proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// egressSession is one call's egress proxy.
type egressSession struct {
	proxy  *egress.Proxy
	ln     net.Listener
	socket string
	allow  *egress.Allowlist
	red    func(string) string

	cancel context.CancelFunc
	served chan struct{}

	mu                 sync.Mutex
	record             func(executor.Event)
	conns, refused     int64
	recorded, dropped  int64
	bytesUp, bytesDown int64
}

// startEgress opens the call's proxy on a fresh socket, binds that socket
// into bp at bwrap.ProxyPath, and has spec's init bridge to it from
// bridgeAddr with the program's proxy variables pointing there.
func (t *Tool) startEgress(plan *procinput.Plan, bp *bwrap.Plan, spec *procinit.Spec) (*egressSession, error) {
	allow, err := t.egressAllowlist(plan.EgressHosts)
	if err != nil {
		return nil, err
	}
	eg := &egressSession{allow: allow, red: t.red.String}
	ok := false
	defer func() {
		if !ok {
			eg.close()
		}
	}()
	eg.proxy, err = egress.New(egress.Config{
		Allow: allow, Ports: t.cfg.EgressPorts, PrivateRanges: t.cfg.EgressPrivateRanges,
		Resolver: t.cfg.EgressResolver, OnConnection: eg.onConnection,
	})
	if err != nil {
		return nil, err
	}
	if eg.socket, err = egressSocket(t.cfg.EgressSocketDir); err != nil {
		return nil, err
	}
	if eg.ln, err = eg.proxy.ListenUnix(eg.socket); err != nil {
		return nil, err
	}
	spec.Env = withProxy(spec.Env)
	spec.Bridge = &procinit.Bridge{Listen: bridgeAddr, Socket: bwrap.ProxyPath}
	bp.ProxySocket = eg.socket
	ok = true
	return eg, nil
}

// egressAllowlist is what the proxy admits: exactly the declared hosts,
// which procinput has checked against the policy's allowlist (a declared
// host is allowlisted, and strict mode requires every host the arguments
// name to be declared). A policy entry "corp.local" admits a declared
// "api.corp.local" and the proxy then admits only "api.corp.local". A
// declared IP literal that is special (loopback, private, ...) is left out
// unless EgressPrivateRanges covers it: the proxy refuses it as
// private_address.
func (t *Tool) egressAllowlist(hosts []string) (*egress.Allowlist, error) {
	entries := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil && egress.IsSpecial(a) &&
			!slices.ContainsFunc(t.cfg.EgressPrivateRanges, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) }) {
			continue
		}
		entries = append(entries, h)
	}
	allow, err := egress.ParseAllowlist(entries)
	if err != nil {
		return nil, fmt.Errorf("declared hosts: %w", err)
	}
	return allow, nil
}

// egressSocket returns a fresh socket path in dir, which it creates 0711
// (traverse only) if missing. dir must be the daemon's and listable by
// nobody else: the socket's unguessable name is what keeps other local
// users, whom the socket's 0666 mode does not stop, from finding it.
func egressSocket(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return "", fmt.Errorf("egress socket directory %s is not a directory", dir)
	case int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("egress socket directory %s belongs to uid %d, not to this process", dir, st.Uid)
	case fi.Mode().Perm()&0o066 != 0:
		if err := os.Chmod(dir, 0o711); err != nil {
			return "", err
		}
	}
	var name [16]byte
	if _, err := rand.Read(name[:]); err != nil {
		return "", err
	}
	p := filepath.Join(dir, base64.RawURLEncoding.EncodeToString(name[:]))
	if len(p) > 107 {
		return "", fmt.Errorf("egress socket path %s is longer than a Unix socket address allows", p)
	}
	return p, nil
}

// withProxy returns env with every proxy variable pointing at the bridge.
func withProxy(env []string) []string {
	out := make([]string, 0, len(env)+len(proxyVars)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToLower(k), "_proxy") {
			out = append(out, kv)
		}
	}
	for _, k := range proxyVars {
		out = append(out, k+"=http://"+bridgeAddr)
	}
	return append(out, "NO_PROXY=", "no_proxy=")
}

// serve starts the proxy; record receives its events. Nil-safe.
func (eg *egressSession) serve(record func(executor.Event)) {
	if eg == nil {
		return
	}
	eg.mu.Lock()
	eg.record = record
	eg.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	eg.cancel, eg.served = cancel, make(chan struct{})
	go func() {
		defer close(eg.served)
		_ = eg.proxy.Serve(ctx, eg.ln)
	}()
}

// stop stops the proxy; once it returns, every connection's record is in.
func (eg *egressSession) stop() {
	if eg.served != nil {
		eg.cancel()
		<-eg.served
		eg.served = nil
	} else if eg.ln != nil {
		eg.ln.Close() // removes the socket
	}
	eg.ln = nil
}

// close stops the proxy of a session whose process never ran. Nil-safe.
func (eg *egressSession) close() {
	if eg != nil && eg.proxy != nil {
		eg.stop()
	}
}

// finish stops the proxy and adds its counts to resources.
func (eg *egressSession) finish(resources map[string]int64) {
	eg.stop()
	eg.mu.Lock()
	defer eg.mu.Unlock()
	resources["egress_connections"] = eg.conns
	resources["egress_refused"] = eg.refused
	resources["egress_bytes_up"] = eg.bytesUp
	resources["egress_bytes_down"] = eg.bytesDown
	resources["egress_events_dropped"] = eg.dropped
}

// onConnection turns the proxy's record of one connection attempt into an
// egress.connection event.
func (eg *egressSession) onConnection(c egress.Connection) {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	eg.conns++
	if !c.Allowed {
		eg.refused++
	}
	eg.bytesUp += c.BytesUp
	eg.bytesDown += c.BytesDown
	if eg.record == nil || eg.recorded >= maxEgressEvents {
		eg.dropped++
		return
	}
	eg.recorded++
	payload := map[string]any{
		"host":        eg.red(c.Host),
		"port":        c.Port,
		"method":      c.Method,
		"address":     "",
		"allowed":     c.Allowed,
		"reason":      c.Reason,
		"end":         c.End,
		"bytes_up":    c.BytesUp,
		"bytes_down":  c.BytesDown,
		"duration_ms": c.Ended.Sub(c.Started).Milliseconds(),
		"started_at":  c.Started.UTC().Format(time.RFC3339Nano),
	}
	if c.Addr.IsValid() {
		payload["address"] = c.Addr.String()
	}
	if c.Detail != "" {
		payload["detail"] = eg.red(c.Detail)
	}
	eg.record(executor.Event{Type: "egress.connection", Payload: payload})
}
