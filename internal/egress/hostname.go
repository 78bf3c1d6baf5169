package egress

import (
	"net/netip"
	"strings"
)

// maxNameLen is the longest DNS name in text form, without the trailing dot.
const maxNameLen = 253

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
