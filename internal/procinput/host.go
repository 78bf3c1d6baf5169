package procinput

import (
	"net/netip"
	"strings"

	"github.com/execledger/execledger/internal/egress"
)

// The host rules (syntax, normalisation, allowlist matching) are the
// egress proxy's: egress.ParseHost, egress.ParseHostPort and
// egress.ParseDomainAllowlist. This file only finds hosts in arguments.

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
	if _, err := egress.ParseHost(c); err != nil {
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
