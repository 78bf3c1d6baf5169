package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// maxNameLen is the longest DNS name in text form, without the trailing dot.
const maxNameLen = 253

// ParseHost returns a host in the one form that the proxy, the allowlist
// and process.run's preflight compare: an IP literal in canonical form
// (IPv6 with or without brackets, IPv4-mapped addresses unmapped, no zone),
// or a DNS name in lower case without its trailing dot (letters, digits and
// inner hyphens; labels of 1 to 63 bytes, 253 in all; a last label that is
// not numeric, so 127.1 and 0x7f.1 are not names). Anything else (non-ASCII,
// white space, a port, userinfo, percent escapes) is refused with
// ErrInvalidHost: IDNs are written in punycode.
func ParseHost(s string) (string, error) {
	h, _, err := parseHost(s)
	return h, err
}

// parseHost is ParseHost, also returning the address of an IP literal.
func parseHost(s string) (string, netip.Addr, error) {
	h, ok := normalizeHost(s)
	if !ok {
		return "", netip.Addr{}, fmt.Errorf("%w %q", ErrInvalidHost, s)
	}
	if a, ok := parseHostLiteral(h); ok {
		return a.String(), a, nil
	}
	if !validName(h) {
		return "", netip.Addr{}, fmt.Errorf("%w %q", ErrInvalidHost, s)
	}
	return h, netip.Addr{}, nil
}

// ParseHostPort parses "host", "host:port", "[ipv6]", "[ipv6]:port" or an
// IPv6 literal without brackets, and returns the host as ParseHost does
// and the port (1 to 65535), 0 when there is none.
func ParseHostPort(s string) (string, int, error) {
	host, port, hasPort := s, "", false
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w %q", ErrInvalidHost, s)
		}
		host = s[:end+1]
		if rest := s[end+1:]; rest != "" {
			if port, hasPort = strings.CutPrefix(rest, ":"); !hasPort {
				return "", 0, fmt.Errorf("%w %q", ErrInvalidHost, s)
			}
		}
	case strings.Count(s, ":") == 1:
		host, port, hasPort = strings.Cut(s, ":")
	}
	h, err := ParseHost(host)
	if err != nil || !hasPort {
		return h, 0, err
	}
	n, err := parsePort(port)
	if err != nil {
		return "", 0, fmt.Errorf("%w %q: %w", ErrInvalidHost, s, err)
	}
	return h, n, nil
}

// normalizeHost lowercases ASCII letters, strips one trailing dot from a
// name and the brackets from an IPv6 literal. It reports false for
// non-ASCII input, so no Unicode case folding can turn one host into another
// (U+212A KELVIN SIGN lowers to "k"), for brackets around anything but an
// IPv6 literal, and for an IP literal with a trailing dot.
func normalizeHost(h string) (string, bool) {
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
		if a, err := netip.ParseAddr(h); err != nil || !a.Is6() {
			return "", false
		}
	} else if name, ok := strings.CutSuffix(h, "."); ok {
		if _, err := netip.ParseAddr(name); err == nil {
			return "", false
		}
		h = name
	}
	b := []byte(h)
	for i, c := range b {
		switch {
		case c >= 0x80:
			return "", false
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b), true
}

// parseHostLiteral parses a normalised host as an IP literal. IPv4-mapped
// IPv6 addresses are unmapped; zoned addresses are not literals we accept.
func parseHostLiteral(h string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(h)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// validName reports whether h (normalised) is a DNS host name: labels of
// 1-63 letters, digits and inner hyphens, at most 253 bytes, and a last label
// that is not numeric. The last rule rejects forms like "127.1" or
// "0x7f.1" that some resolvers read as IPv4 addresses.
func validName(h string) bool {
	if h == "" || len(h) > maxNameLen {
		return false
	}
	last := h
	for label := range strings.SplitSeq(h, ".") {
		if !validLabel(label) {
			return false
		}
		last = label
	}
	return !numericLabel(last)
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// numericLabel reports whether l is all decimal digits or "0x" followed by
// hex digits, as in the WHATWG URL "ends in a number" check.
func numericLabel(l string) bool {
	digits := l
	hex := false
	if strings.HasPrefix(l, "0x") {
		digits, hex = l[2:], true
	} else if l == "" {
		return false
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if '0' <= c && c <= '9' || hex && 'a' <= c && c <= 'f' {
			continue
		}
		return false
	}
	return true
}
