package procinput

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/egress"
)

// ruleHosts are hosts as a program names them, the tricky ones included.
var ruleHosts = []string{
	"example.com", "EXAMPLE.com.", "Example.COM", "api.example.com", "a.b.example.com.",
	"evil-example.com", "evilexample.com", "example.com.evil.net", "example.co", "com",
	"corp.local", "API.corp.local", "evilcorp.local", "corp.local.evil.test",
	"localhost", "a.localhost", "xn--bcher-kva.de", "b\u00fccher.de", "\u212Aorp.local", "api.corp.local\u3002",
	"10.0.0.1", "10.0.0.2", "10.0.0.1.", "[10.0.0.1]", "1.10.0.0.1", "010.0.0.1", "127.1", "0x7f.1",
	"2130706433", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:10.0.0.1", "[::ffff:10.0.0.1]",
	"fe80::1%eth0", "[fe80::1%25eth0]", "::2",
	"a@example.com", "example.com@evil.net", "exa%6dple.com", "example%2ecom", "ex ample.com",
	"example..com", "-example.com", "example-.com", "under_score.example.com", "", ".", "*.example.com", " example.com",
}

// rulePolicy is a policy allowlist; ruleProxyEntries is the same
// allowlist in the proxy's grammar, where a name admits only itself and
// ".name" its subdomains (TestEgressAllowlistIsTheProxys).
var (
	rulePolicy       = []string{"example.com", "*.corp.local", "localhost", "xn--bcher-kva.de", "10.0.0.1", "::1"}
	ruleProxyEntries = []string{"example.com", ".example.com", "corp.local", ".corp.local", "localhost", "xn--bcher-kva.de",
		".xn--bcher-kva.de", "10.0.0.1", "::1"}
)

// TestPreflightAndProxyAgree: a host is admitted by process.run's check
// exactly when the egress proxy, given the same allowlist, admits a
// connection to it.
func TestPreflightAndProxyAgree(t *testing.T) {
	ws := newTestWorkspace(t)
	allow, err := egress.ParseAllowlist(ruleProxyEntries)
	must(t, err)
	proxy := startRuleProxy(t, allow)
	p := ws.policy()
	p.EgressAllowlist = rulePolicy
	admitted := 0
	for _, h := range ruleHosts {
		_, err := Check(&Input{Command: "true", RequestedEgressHosts: []string{h}}, p)
		preflight := err == nil
		if err != nil && !errors.Is(err, ErrEgressDenied) && !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("%q: %v", h, err)
		}
		if got := proxy.admits(t, h); got != preflight {
			t.Errorf("host %q: preflight admits %v (%v), the proxy %v", h, preflight, err, got)
		}
		if preflight {
			admitted++
		}
	}
	if admitted < 10 || admitted > len(ruleHosts)-10 {
		t.Fatalf("%d of %d hosts admitted: the table no longer tells the rules apart", admitted, len(ruleHosts))
	}
}

// TestDeclaredHostsReachTheProxy: the hosts strict mode hands to the
// sandbox make an allowlist the proxy accepts, and it admits the host as
// the program named it.
func TestDeclaredHostsReachTheProxy(t *testing.T) {
	ws := newTestWorkspace(t)
	p := ws.policy()
	p.EgressMode, p.EgressAllowlist = EgressStrict, rulePolicy
	accepted := 0
	for _, h := range ruleHosts {
		plan, err := Check(&Input{Command: "true", RequestedEgressHosts: []string{h}}, p)
		if err != nil {
			continue
		}
		accepted++
		allow, err := egress.ParseAllowlist(plan.EgressHosts)
		if err != nil {
			t.Errorf("host %q: declared hosts %q: %v", h, plan.EgressHosts, err)
			continue
		}
		if !startRuleProxy(t, allow).admits(t, h) {
			t.Errorf("host %q: accepted as %q, but the proxy does not admit it", h, plan.EgressHosts)
		}
	}
	if accepted < 10 {
		t.Fatalf("only %d hosts accepted: the test checks almost nothing", accepted)
	}
}

// testProxy is the address of a real egress proxy on loopback whose
// resolver and dialer always fail, so nothing leaves the test: a host it
// admits ends in resolve_failed or dial_failed.
type testProxy string

func startRuleProxy(t *testing.T, allow *egress.Allowlist) testProxy {
	t.Helper()
	fail := errors.New("the test reaches nothing")
	px, err := egress.New(egress.Config{
		Allow:    allow,
		Resolver: failingResolver{fail},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, fail
		},
	})
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- px.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	})
	return testProxy(ln.Addr().String())
}

// admits sends CONNECT host:443 and reports whether the host passed the
// proxy's allowlist.
func (a testProxy) admits(t *testing.T, host string) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", string(a), 5*time.Second)
	must(t, err)
	defer c.Close()
	must(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	authority := host + ":443"
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		authority = "[" + host + "]:443" // an IPv6 literal, as a client writes it
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", authority); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	must(t, err)
	resp.Body.Close()
	switch reason := resp.Header.Get(egress.HeaderReason); reason {
	case egress.ReasonResolveFailed, egress.ReasonDialFailed:
		return true
	case egress.ReasonHostNotAllowlisted, egress.ReasonBadRequest, egress.ReasonPrivateAddress:
		return false
	default:
		t.Fatalf("CONNECT %s: status %s, reason %q", authority, resp.Status, reason)
		return false
	}
}

type failingResolver struct{ err error }

func (r failingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, r.err
}
