package egress

import (
	"errors"
	"slices"
	"testing"
)

func TestParseHost(t *testing.T) {
	t.Parallel()
	valid := map[string]string{
		"example.com": "example.com", "EXAMPLE.com.": "example.com", "xn--bcher-kva.de": "xn--bcher-kva.de",
		"localhost": "localhost", "a-b.c0": "a-b.c0", "10.0.0.1": "10.0.0.1", "::1": "::1", "[::1]": "::1",
		"0:0:0:0:0:0:0:1": "::1", "::ffff:10.0.0.1": "10.0.0.1", "[::ffff:10.0.0.1]": "10.0.0.1", "[2001:DB8::1]": "2001:db8::1",
	}
	for in, want := range valid {
		if got, err := ParseHost(in); err != nil || got != want {
			t.Errorf("ParseHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", ".", "..", " example.com", "example.com ", "exa mple.com", "example..com", "-a.com", "a-.com", "a_b.com",
		"a@example.com", "exa%6dple.com", "example.com:443", "b\u00fccher.de", "\u212Aey.com", "*.example.com",
		"127.1", "0x7f.1", "2130706433", "1.10.0.0.1", "10.0.0.1.", "[10.0.0.1]", "[example.com]", "fe80::1%eth0",
		"[fe80::1%eth0]", "[::1].", "::1.", "[::1",
	} {
		if got, err := ParseHost(in); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("ParseHost(%q) = %q, %v; want ErrInvalidHost", in, got, err)
		}
	}
}

func TestParseHostPort(t *testing.T) {
	t.Parallel()
	type hp struct {
		host string
		port int
	}
	valid := map[string]hp{
		"example.com": {"example.com", 0}, "Example.com:443": {"example.com", 443}, "10.0.0.1:80": {"10.0.0.1", 80},
		"[::1]": {"::1", 0}, "[::1]:65535": {"::1", 65535}, "::1": {"::1", 0}, "2001:db8::1": {"2001:db8::1", 0},
	}
	for in, want := range valid {
		if h, p, err := ParseHostPort(in); err != nil || (hp{h, p}) != want {
			t.Errorf("ParseHostPort(%q) = %q, %d, %v; want %v", in, h, p, err, want)
		}
	}
	for _, in := range []string{
		"example.com:", "example.com:0", "example.com:65536", "example.com:99999", "example.com:+1", "example.com:https",
		"[::1]:", "[::1]x", "[::1", "::1:443x", "a:b:c", ":443", "a@example.com:443", "10.0.0.1.:80",
	} {
		if h, p, err := ParseHostPort(in); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("ParseHostPort(%q) = %q, %d, %v; want ErrInvalidHost", in, h, p, err)
		}
	}
}

func TestParseDomainAllowlist(t *testing.T) {
	t.Parallel()
	a, err := ParseDomainAllowlist([]string{"Corp.Local.", "*.example.com", ".svc.example.org", "localhost", "10.0.0.1", "192.168.0.0/16", "[::1]"})
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"corp.local", "api.corp.local", "A.B.CORP.LOCAL.", "example.com", "x.example.com", "svc.example.org",
		"a.svc.example.org", "localhost", "10.0.0.1", "192.168.3.4", "::1", "[::1]",
	}
	denied := []string{
		"evilcorp.local", "corp.local.evil.test", "xexample.com", "example.org", "a.localhost", "10.0.0.2", "::2",
		"127.1", "corp.local:443", "",
	}
	checkAllows(t, a, allowed, denied)
	want := []string{".corp.local", ".example.com", ".svc.example.org", "10.0.0.1", "192.168.0.0/16", "::1",
		"corp.local", "example.com", "localhost", "svc.example.org"}
	if got := a.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %q\nwant        %q", got, want)
	}
	for _, e := range []string{"", ".", "*", "*.", "*.com", ".com", "*.localhost", "1", "127.1", "*.10.0.0.1", "exa mple.com",
		"b\u00fccher.de", "fe80::1%eth0", "0.0.0.0/0", "example.com:443"} {
		if _, err := ParseDomainAllowlist([]string{"ok.example", e}); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("ParseDomainAllowlist(%q) = %v, want ErrInvalidEntry", e, err)
		}
	}
}
