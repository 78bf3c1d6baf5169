package egress

import (
	"errors"
	"slices"
	"testing"
)

func TestParseAllowlistRejects(t *testing.T) {
	t.Parallel()
	for _, e := range []string{
		"", ".", "*", "*.", "..", "*.*", "**.example.com", "api.*.com", "*.com", ".com", "*.local", ".local.",
		"0.0.0.0/0", "::/0", "::ffff:0:0/96", "10.0.0.0/33", "10.0.0.0/x", "fe80::1%eth0", "[fe80::1%eth0]",
		"exa mple.com", "example.com:443", "http://example.com", "a..b", "-a.example.com", "a-.example.com",
		"under_score.example.com", "ex\u212Ample.com", "b\u00fccher.de", "127.1", "1.2.3", "0x7f.1", "example.123",
		"a.b/24", string(make([]byte, 300)),
		"a123456789012345678901234567890123456789012345678901234567890123.com",
	} {
		if _, err := ParseAllowlist([]string{"ok.example", e}); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("ParseAllowlist(%q) = %v, want ErrInvalidEntry", e, err)
		}
	}
}

func TestAllowsHost(t *testing.T) {
	t.Parallel()
	a, err := ParseAllowlist([]string{
		"API.Example.COM.", ".corp.local", "*.svc.example.org", "intranet", "xn--bcher-kva.de",
		"10.1.2.3", "192.168.0.0/16", "2001:db8::/32", "::ffff:172.16.0.0/108", "[fd00::1]",
	})
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"api.example.com", "API.EXAMPLE.COM", "api.example.com.", "api.corp.local", "a.b.corp.local", "A.Corp.Local.",
		"x.svc.example.org", "intranet", "xn--bcher-kva.de",
		"10.1.2.3", "::ffff:10.1.2.3", "[::ffff:10.1.2.3]", "192.168.99.1", "2001:db8::5", "[2001:db8::5]",
		"172.16.5.5", "172.31.255.255", "fd00::1",
	}
	denied := []string{
		"", ".", "example.com", "www.api.example.com", "api.example.com.evil.test", "xapi.example.com",
		"corp.local", "evilcorp.local", "corp.local.evil.test", "svc.example.org", "intranet.evil.test",
		"10.1.2.4", "10.1.2.3.", "[10.1.2.3]", "[2001:db8::5].", "192.169.0.1", "2001:db9::1", "172.32.0.0", "fd00::2",
		"api.example.com:443", "api..corp.local", "*.corp.local", ".corp.local", "api.corp.local..",
		"\u212Aey.corp.local", "127.1", "fe80::1%eth0", "[api.example.com]", "a_b.corp.local",
	}
	checkAllows(t, a, allowed, denied)
	want := []string{
		"*.corp.local"[1:], ".svc.example.org", "10.1.2.3", "172.16.0.0/12", "192.168.0.0/16",
		"2001:db8::/32", "api.example.com", "fd00::1", "intranet", "xn--bcher-kva.de",
	}
	if got := a.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %q\nwant        %q", got, want)
	}
	again, err := ParseAllowlist(a.Entries())
	if err != nil || !slices.Equal(again.Entries(), want) {
		t.Errorf("entries do not round-trip: %q, %v", again.Entries(), err)
	}
}

func TestEmptyAndNilAllowlists(t *testing.T) {
	t.Parallel()
	empty, err := ParseAllowlist(nil)
	if err != nil {
		t.Fatal(err)
	}
	var nilList *Allowlist
	for _, a := range []*Allowlist{empty, nilList} {
		if a.AllowsHost("example.com") || a.AllowsHost("127.0.0.1") || len(a.Entries()) != 0 {
			t.Errorf("%v allows something", a)
		}
	}
}

// checkAllows requires a to admit every host of allowed and none of denied.
func checkAllows(t *testing.T, a *Allowlist, allowed, denied []string) {
	t.Helper()
	for _, h := range allowed {
		if !a.AllowsHost(h) {
			t.Errorf("AllowsHost(%q) = false", h)
		}
	}
	for _, h := range denied {
		if a.AllowsHost(h) {
			t.Errorf("AllowsHost(%q) = true", h)
		}
	}
}
