package egress

import (
	"bufio"
	"net/netip"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"api.example.com", ".example.com", "*.example.com", "corp.local", "10.0.0.0/8", "10.1.2.3", "::1",
	"[::1]", "::ffff:10.0.0.0/104", "EXAMPLE.com.", "*", "", ".", "127.1", "xn--bcher-kva.de", "a..b",
}

// FuzzParseAllowlist checks that accepted entries behave as documented.
func FuzzParseAllowlist(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		a, err := ParseAllowlist([]string{entry})
		if err != nil {
			return
		}
		entries := a.Entries()
		if len(entries) != 1 {
			t.Fatalf("%q: entries %q", entry, entries)
		}
		norm := entries[0]
		if again, err := ParseAllowlist(entries); err != nil || again.Entries()[0] != norm {
			t.Fatalf("%q: normalised %q does not round-trip: %v", entry, norm, err)
		}
		if strings.Contains(norm, "/") {
			p := netip.MustParsePrefix(norm)
			if p.Bits() == 0 || !a.AllowsHost(p.Addr().String()) {
				t.Fatalf("%q: prefix %s misbehaves", entry, p)
			}
			return
		}
		if addr, err := netip.ParseAddr(norm); err == nil {
			if !a.AllowsHost(addr.String()) || addr.Is6() && !a.AllowsHost("["+addr.String()+"]") {
				t.Fatalf("%q: address %s not allowed", entry, addr)
			}
			return
		}
		if suffix, ok := strings.CutPrefix(norm, "."); ok {
			if !strings.Contains(suffix, ".") {
				t.Fatalf("%q: single-label suffix accepted", entry)
			}
			if !a.AllowsHost("x"+norm) || !a.AllowsHost("A.B"+strings.ToUpper(norm)+".") {
				t.Fatalf("%q: subdomain of %s not allowed", entry, norm)
			}
			if a.AllowsHost(suffix) || a.AllowsHost("x"+suffix) {
				t.Fatalf("%q: %s matches its apex or across a label boundary", entry, norm)
			}
			return
		}
		if !validName(norm) || !a.AllowsHost(norm) || !a.AllowsHost(strings.ToUpper(norm)+".") || a.AllowsHost("x."+norm) {
			t.Fatalf("%q: exact entry %s misbehaves", entry, norm)
		}
	})
}

// FuzzAllowsHost compares the matcher with a direct reading of the rules.
func FuzzAllowsHost(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "api.example.com")
		f.Add(s, "evilcorp.local")
		f.Add(s, "10.0.0.1")
	}
	f.Fuzz(func(t *testing.T, entry, host string) {
		a, err := ParseAllowlist([]string{entry})
		if err != nil {
			return
		}
		got := a.AllowsHost(host)
		if got != a.AllowsHost(strings.ToUpper(host)) && isASCII(host) {
			t.Fatalf("entry %q host %q: case matters", entry, host)
		}
		if want := referenceAllows(a.Entries()[0], host); got != want {
			t.Fatalf("entry %q host %q: AllowsHost = %v, reference %v", entry, host, got, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// referenceAllows is the documented matching rule, written independently.
func referenceAllows(norm, host string) bool {
	if !isASCII(host) {
		return false
	}
	h := strings.ToLower(host)
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		addr, err := netip.ParseAddr(inner)
		if !ok || err != nil || !addr.Is6() {
			return false
		}
		h = inner
	} else if name, ok := strings.CutSuffix(h, "."); ok {
		if _, err := netip.ParseAddr(name); err == nil {
			return false
		}
		h = name
	}
	if addr, err := netip.ParseAddr(h); err == nil {
		if addr.Zone() != "" {
			return false
		}
		if p, err := netip.ParsePrefix(norm); err == nil {
			return p.Contains(addr.Unmap())
		}
		single, err := netip.ParseAddr(norm)
		return err == nil && single == addr.Unmap()
	}
	if !validName(h) || strings.Contains(norm, "/") {
		return false
	}
	if strings.HasPrefix(norm, ".") {
		return strings.HasSuffix(h, norm)
	}
	return h == norm
}

// FuzzParseTarget checks that whatever request head is accepted names a
// valid host (a DNS name or a canonical, unmapped IP literal) and port.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
		"GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"CONNECT [::ffff:10.0.0.1]:443 HTTP/1.1\r\n\r\n",
		"GET http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, head string) {
		req, hostHeader, _, err := readRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			return
		}
		tgt, err := parseTarget(req, hostHeader)
		if err != nil {
			return
		}
		if tgt.port < 1 || tgt.port > 65535 {
			t.Fatalf("%q: port %d", head, tgt.port)
		}
		if tgt.addr.IsValid() {
			if tgt.addr.Is4In6() || tgt.addr.Zone() != "" || tgt.host != tgt.addr.String() {
				t.Fatalf("%q: literal %v host %q", head, tgt.addr, tgt.host)
			}
			return
		}
		if !validName(tgt.host) {
			t.Fatalf("%q: invalid name %q accepted", head, tgt.host)
		}
	})
}

// FuzzParseHost: a parsed host is a fixed point, and an allowlist of it
// admits the host as first written.
func FuzzParseHost(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			return
		}
		if again, err := ParseHost(h); err != nil || again != h {
			t.Fatalf("ParseHost(%q) = %q, which parses as %q, %v", s, h, again, err)
		}
		a, err := ParseAllowlist([]string{h})
		if err != nil || !a.AllowsHost(s) {
			t.Fatalf("an allowlist of %q (%v) does not admit %q", h, err, s)
		}
	})
}
