package procinput

import (
	"errors"
	"net/netip"
	"strings"
)

var errBadHost = errors.New("not a host name or IP address")

// normalizeHost returns host lower-cased without a trailing dot, or an IP
// address in canonical form (IPv6 with or without brackets). Names are
// ASCII letters, digits, '-' and '.', labels of 1 to 63 bytes, 253 bytes
// in all.
func normalizeHost(raw string) (string, error) {
	h := strings.TrimSpace(raw)
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() {
			return "", errBadHost
		}
		return a.String(), nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String(), nil
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > 253 {
		return "", errBadHost
	}
	for _, label := range strings.Split(h, ".") {
		if !validLabel(label) {
			return "", errBadHost
		}
	}
	return h, nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

// normalizeRequested accepts a requested host with an optional port:
// "host", "host:443", "1.2.3.4:80", "[::1]", "[::1]:443", "::1". The port
// is dropped: the allowlist is per host.
func normalizeRequested(raw string) (string, error) {
	h := strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 || !validPort(h[end+1:], true) {
			return "", errBadHost
		}
		h = h[:end+1]
	case strings.Count(h, ":") == 1:
		host, port, _ := strings.Cut(h, ":")
		if !validPort(":"+port, false) {
			return "", errBadHost
		}
		h = host
	}
	return normalizeHost(h)
}

// validPort accepts ":digits", or "" when optional.
func validPort(s string, optional bool) bool {
	if s == "" {
		return optional
	}
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	return allDigits(s[1:])
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// allowlistEntry normalises a policy allowlist entry: a host or IP, with an
// optional leading "*." or ".".
func allowlistEntry(e string) (string, error) {
	e = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(e), "*"), ".")
	return normalizeHost(e)
}

// hostAllowed matches a normalised host against the allowlist: exact, or
// a DNS suffix at a label boundary. IP addresses match exactly.
func hostAllowed(host string, allowlist []string) bool {
	isIP := isIPAddr(host)
	for _, raw := range allowlist {
		e, err := allowlistEntry(raw)
		if err != nil {
			continue
		}
		if host == e || (!isIP && !isIPAddr(e) && strings.HasSuffix(host, "."+e)) {
			return true
		}
	}
	return false
}

// isIPAddr reports an IP address, or a name that resolvers may read as
// one (a numeric or 0x last label: "127.1", "0x7f.1", "2130706433"); such
// names never match by suffix.
func isIPAddr(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	return allDigits(last) || strings.HasPrefix(last, "0x")
}

// looksLikeHost is Palyra's test for a bare host in an argument: localhost,
// an IPv4 address, or a dotted name whose last label is 2+ letters; plus a
// bracketed IPv6 address.
func looksLikeHost(s string) bool {
	c := strings.ToLower(strings.TrimSuffix(s, "."))
	if c == "localhost" {
		return true
	}
	if strings.HasPrefix(c, "[") && strings.HasSuffix(c, "]") {
		a, err := netip.ParseAddr(c[1 : len(c)-1])
		return err == nil && a.Is6()
	}
	if a, err := netip.ParseAddr(c); err == nil {
		return a.Is4()
	}
	if !strings.Contains(c, ".") {
		return false
	}
	if _, err := normalizeHost(c); err != nil {
		return false
	}
	tld := c[strings.LastIndexByte(c, '.')+1:]
	if len(tld) < 2 {
		return false
	}
	for i := 0; i < len(tld); i++ {
		if tld[i] < 'a' || tld[i] > 'z' {
			return false
		}
	}
	return true
}
