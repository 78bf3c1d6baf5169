package procinput

import (
	"slices"
	"testing"
)

func TestCheckEgress(t *testing.T) {
	ws := newTestWorkspace(t)
	mode := func(m string) func(*Policy) { return func(p *Policy) { p.EgressMode = m } }
	type a = []string
	cases := []checkCase{
		// extraction (preflight)
		{name: "URL allowlisted exactly", in: Input{Command: "curl", Args: a{"https://example.com/x"}}},
		{name: "URL not allowlisted", in: Input{Command: "curl", Args: a{"https://evil.test/x"}}, want: ReasonHostNotAllowlisted},
		{name: "URL userinfo trick", in: Input{Command: "curl", Args: a{"https://example.com@evil.test/"}}, want: ReasonHostNotAllowlisted},
		{name: "URL without slashes (http:host)", in: Input{Command: "curl", Args: a{"http:evil.test"}}, want: ReasonHostNotAllowlisted},
		{name: "URL with backslash refused", in: Input{Command: "curl", Args: a{`http://evil.test\@example.com/`}}, want: ReasonURLInvalid},
		{name: "requested host not allowlisted", in: Input{Command: "ls", RequestedEgressHosts: a{"evil.test"}}, want: ReasonHostNotAllowlisted},
		{name: "requested host allowlisted", in: Input{Command: "ls", RequestedEgressHosts: a{"example.com"}}},
		{name: "requested host with port", in: Input{Command: "ls", RequestedEgressHosts: a{"example.com:443"}}},
		{name: "requested host invalid", in: Input{Command: "ls", RequestedEgressHosts: a{"exa mple.com"}}, want: ReasonHostInvalid},
		{name: "key=value with host key", in: Input{Command: "tool", Args: a{"--proxy=evil.test"}}, want: ReasonHostNotAllowlisted},
		{name: "key=value with non-host key ignores bare name", in: Input{Command: "tool", Args: a{"--name=evil.test"}}},
		{name: "key=value URL value", in: Input{Command: "tool", Args: a{"target=https://evil.test/"}}, want: ReasonHostNotAllowlisted},
		{name: "arg after --host", in: Input{Command: "tool", Args: a{"--host", "evil.test"}}, want: ReasonHostNotAllowlisted},
		{name: "arg after --db-server", in: Input{Command: "tool", Args: a{"--db-server", "evil.test"}}, want: ReasonHostNotAllowlisted},
		{name: "host:port", in: Input{Command: "nc", Args: a{"evil.test:80"}}, want: ReasonHostNotAllowlisted},
		{name: "IPv4:port", in: Input{Command: "nc", Args: a{"10.0.0.2:80"}}, want: ReasonHostNotAllowlisted},
		{name: "allowlisted IPv4:port", in: Input{Command: "nc", Args: a{"10.0.0.1:80"}}},
		{name: "localhost:port", in: Input{Command: "curl", Args: a{"localhost:8080"}}, want: ReasonHostNotAllowlisted},
		{name: "bracketed IPv6 URL allowlisted", in: Input{Command: "curl", Args: a{"http://[::1]:8080/"}}},
		{name: "bracketed IPv6 URL not allowlisted", in: Input{Command: "curl", Args: a{"http://[2001:db8::1]/"}}, want: ReasonHostNotAllowlisted},
		{name: "bracketed IPv6 host:port", in: Input{Command: "nc", Args: a{"[2001:db8::1]:80"}}, want: ReasonHostNotAllowlisted},
		{name: "scp-style user@host:path", in: Input{Command: "git", Args: a{"clone", "git@evil.test:org/repo.git"}}, want: ReasonHostNotAllowlisted},
		{name: "time is not host:port", in: Input{Command: "echo", Args: a{"12:30"}}},
		{name: "bare name without hint is not a host", in: Input{Command: "echo", Args: a{"evil.test"}}},
		// allowlist matching
		{name: "DNS suffix at label boundary", in: Input{Command: "curl", Args: a{"https://api.corp.local/"}}},
		{name: "not a label boundary", in: Input{Command: "curl", Args: a{"https://evilcorp.local/"}}, want: ReasonHostNotAllowlisted},
		{name: "case-insensitive", in: Input{Command: "curl", Args: a{"https://API.Corp.LOCAL/"}}},
		{name: "trailing dot", in: Input{Command: "curl", Args: a{"https://api.corp.local./"}}},
		{name: "allowlist entry with *.", in: Input{Command: "curl", Args: a{"https://x.y.test/"}},
			policy: func(p *Policy) { p.EgressAllowlist = []string{"*.y.test"} }},
		{name: "IP addresses match exactly", in: Input{Command: "curl", Args: a{"http://10.0.0.10/"}}, want: ReasonHostNotAllowlisted},
		{name: "a name ending in an IP address is not a host", in: Input{Command: "curl", Args: a{"http://1.10.0.0.1/"}}, want: ReasonHostInvalid},
		{name: "a numeric last label is not a host", in: Input{Command: "curl", Args: a{"http://0x7f.1/"}}, want: ReasonHostInvalid},
		{name: "IP addresses match by CIDR", in: Input{Command: "curl", Args: a{"http://10.9.8.7/"}},
			policy: func(p *Policy) { p.EgressAllowlist = []string{"10.0.0.0/8"} }},
		{name: "a single-label entry matches only itself", in: Input{Command: "curl", Args: a{"http://a.localhost/"}},
			policy: func(p *Policy) { p.EgressAllowlist = []string{"localhost"} }, want: ReasonHostNotAllowlisted},
		{name: "IPv4-mapped IPv6 in brackets", in: Input{Command: "curl", Args: a{"http://[::ffff:10.0.0.1]/"}}},
		{name: "requested IP with a trailing dot", in: Input{Command: "ls", RequestedEgressHosts: a{"10.0.0.1."}}, want: ReasonHostInvalid},
		{name: "requested host with port 0", in: Input{Command: "ls", RequestedEgressHosts: a{"example.com:0"}}, want: ReasonHostInvalid},
		// modes
		{name: "none ignores hosts", in: Input{Command: "curl", Args: a{"https://evil.test/"}}, policy: mode(EgressNone)},
		{name: "strict with declared host", in: Input{Command: "curl", Args: a{"https://example.com/"}, RequestedEgressHosts: a{"example.com"}},
			policy: mode(EgressStrict)},
		{name: "strict with undeclared host", in: Input{Command: "curl", Args: a{"https://api.corp.local/"}, RequestedEgressHosts: a{"example.com"}},
			policy: mode(EgressStrict), want: ReasonHostNotRequested},
		{name: "strict still needs the allowlist", in: Input{Command: "curl", RequestedEgressHosts: a{"evil.test"}},
			policy: mode(EgressStrict), want: ReasonHostNotAllowlisted},
		{name: "default mode is strict", in: Input{Command: "curl", Args: a{"https://example.com/"}},
			policy: mode(""), want: ReasonHostNotRequested},
	}
	runCheckCases(t, ws, cases)
}

func TestCheckEgressHosts(t *testing.T) {
	ws := newTestWorkspace(t)
	in := Input{Command: "curl", Args: []string{"https://API.corp.local./x", "http://[::1]/"}, RequestedEgressHosts: []string{"Example.com:443", "api.corp.local", "::1"}}
	for _, c := range []struct {
		mode string
		want []string
	}{
		{EgressNone, nil},
		{EgressPreflight, []string{"example.com", "api.corp.local", "::1"}},
		{EgressStrict, []string{"example.com", "api.corp.local", "::1"}},
	} {
		p := ws.policy()
		p.EgressMode = c.mode
		plan, err := Check(&in, p)
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		if !slices.Equal(plan.EgressHosts, c.want) || plan.EgressMode != c.mode {
			t.Errorf("%s: EgressHosts = %q, want %q", c.mode, plan.EgressHosts, c.want)
		}
	}
}
