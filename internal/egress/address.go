package egress

import "net/netip"

// specialPrefixes are the ranges a sandbox may not reach unless an IP/CIDR
// allowlist entry covers the address: everything that is not plainly a
// public unicast destination. Sources: RFC 6890 and the IANA IPv4/IPv6
// special-purpose address registries.
var specialPrefixes = []netip.Prefix{
	// IPv4
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network", unspecified
	netip.MustParsePrefix("10.0.0.0/8"),      // RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, incl. 169.254.169.254 metadata
	netip.MustParsePrefix("172.16.0.0/12"),   // RFC 1918
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),  // RFC 1918
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, incl. 255.255.255.255 broadcast
	// IPv6
	netip.MustParsePrefix("::/96"),           // unspecified, loopback, IPv4-compatible
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped (unmapped before the check; kept for safety)
	netip.MustParsePrefix("::ffff:0:0:0/96"), // SIIT IPv4-translated
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, incl. Teredo 2001::/32
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("fc00::/7"),        // unique local, incl. fd00:ec2::254 metadata
	netip.MustParsePrefix("fe80::/10"),       // link-local
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("ff00::/8"),        // multicast
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64: IPv4 in the last 32 bits
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4: IPv4 in bits 16-47
)

// IsSpecial reports whether a is not a public unicast address: loopback,
// private, link-local, multicast and the other ranges the proxy refuses
// unless an IP/CIDR allowlist entry or Config.PrivateRanges covers them.
func IsSpecial(a netip.Addr) bool { return isSpecial(a) }

// isSpecial reports whether a is not a public unicast address. IPv4-mapped
// addresses are judged as IPv4; NAT64 and 6to4 addresses by the IPv4 address
// they embed, so DNS64 answers for public hosts stay usable.
func isSpecial(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return true
	}
	switch {
	case nat64.Contains(a):
		b := a.As16()
		return isSpecial(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		b := a.As16()
		return isSpecial(netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
