package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Allowlist is the set of destinations a sandbox may reach. It is
// immutable after ParseAllowlist and safe for concurrent use. A nil
// *Allowlist allows nothing.
type Allowlist struct {
	exact    map[string]bool // "api.example.com"
	suffixes map[string]bool // ".example.com": proper subdomains only
	prefixes []netip.Prefix  // IP and CIDR entries; IPv4 unmapped
	entries  []string        // normalised, sorted, deduplicated
}

// ParseAllowlist parses allowlist entries:
//
//   - "api.example.com" allows exactly that host.
//   - ".example.com" or "*.example.com" allows every proper subdomain at a
//     label boundary: ".corp.local" allows api.corp.local and a.b.corp.local,
//     but neither evilcorp.local nor corp.local itself (list it separately).
//     The suffix needs at least two labels ("*.com" is refused as too broad).
//   - "10.1.2.3", "2001:db8::1", "[::1]" or "10.0.0.0/8" allows addresses in
//     that range, whether a client names them as a literal or a name resolves
//     into them, and these entries also admit private and special addresses.
//     A /0 prefix is refused.
//
// Names are ASCII only (IDNs in punycode), case-insensitive, and may carry
// one trailing dot. An empty entry, "*", "." and invalid names fail with
// ErrInvalidEntry. An empty list is valid and allows nothing.
func ParseAllowlist(entries []string) (*Allowlist, error) {
	a := &Allowlist{exact: map[string]bool{}, suffixes: map[string]bool{}}
	for _, e := range entries {
		norm, err := a.add(e)
		if err != nil {
			return nil, fmt.Errorf("egress: allowlist entry %q: %w", e, err)
		}
		a.entries = append(a.entries, norm)
	}
	slices.Sort(a.entries)
	a.entries = slices.Compact(a.entries)
	return a, nil
}

// add parses one entry into a and returns its normalised form.
func (a *Allowlist) add(e string) (string, error) {
	h, ok := normalizeHost(e)
	switch {
	case !ok:
		return "", fmt.Errorf("%w: non-ASCII (use punycode)", ErrInvalidEntry)
	case h == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidEntry)
	case h == "*" || h == "*." || h == ".":
		return "", fmt.Errorf("%w: matches every host", ErrInvalidEntry)
	case strings.Contains(h, "/"):
		return a.addPrefix(h)
	}
	if addr, ok := parseHostLiteral(h); ok {
		p := netip.PrefixFrom(addr, addr.BitLen())
		a.prefixes = append(a.prefixes, p)
		return addr.String(), nil
	}
	suffix, isSuffix := strings.CutPrefix(h, "*.")
	if !isSuffix {
		suffix, isSuffix = strings.CutPrefix(h, ".")
	}
	if !validName(suffix) {
		return "", fmt.Errorf("%w: not a host name, IP or CIDR", ErrInvalidEntry)
	}
	if !isSuffix {
		a.exact[suffix] = true
		return suffix, nil
	}
	if !strings.Contains(suffix, ".") {
		return "", fmt.Errorf("%w: suffix %q covers a whole top-level domain", ErrInvalidEntry, suffix)
	}
	a.suffixes["."+suffix] = true
	return "." + suffix, nil
}

// ParseDomainAllowlist parses entries in the grammar of process.run's
// policy (Palyra's): a name admits itself and every name below it at a
// label boundary ("corp.local" admits api.corp.local, not evilcorp.local),
// and a leading "*." or "." changes nothing. As in ParseAllowlist, a
// suffix needs two labels: a single-label name ("localhost") admits only
// itself, and "*.com" is refused. IP and CIDR entries are as in
// ParseAllowlist. Entries returns the ParseAllowlist entries that admit the
// same hosts ("corp.local" and ".corp.local").
func ParseDomainAllowlist(entries []string) (*Allowlist, error) {
	var expanded []string
	for _, e := range entries {
		x, err := domainEntries(e)
		if err != nil {
			return nil, fmt.Errorf("egress: allowlist entry %q: %w", e, err)
		}
		expanded = append(expanded, x...)
	}
	return ParseAllowlist(expanded)
}

// domainEntries returns the ParseAllowlist entries equivalent to e.
func domainEntries(e string) ([]string, error) {
	h, ok := normalizeHost(e)
	if !ok {
		return []string{e}, nil // refused by ParseAllowlist
	}
	name, wild := strings.CutPrefix(h, "*.")
	if !wild {
		name, wild = strings.CutPrefix(h, ".")
	}
	switch {
	case !validName(name) && wild:
		return nil, fmt.Errorf("%w: not a host name", ErrInvalidEntry)
	case !validName(name):
		return []string{e}, nil // an IP or CIDR, or refused by ParseAllowlist
	case !strings.Contains(name, "."):
		if wild {
			return nil, fmt.Errorf("%w: suffix %q covers a whole top-level domain", ErrInvalidEntry, name)
		}
		return []string{name}, nil
	}
	return []string{name, "." + name}, nil
}

func (a *Allowlist) addPrefix(h string) (string, error) {
	p, err := netip.ParsePrefix(h)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	if addr := p.Addr(); addr.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(addr.Unmap(), p.Bits()-96)
	}
	if p.Bits() == 0 {
		return "", fmt.Errorf("%w: matches every address", ErrInvalidEntry)
	}
	p = p.Masked()
	a.prefixes = append(a.prefixes, p)
	return p.String(), nil
}

// Entries returns the normalised entries, sorted and deduplicated, for
// recording the policy an execution ran under.
func (a *Allowlist) Entries() []string {
	if a == nil {
		return nil
	}
	return slices.Clone(a.entries)
}

// AllowsHost reports whether host (a name or an IP literal, optionally in
// brackets, without a port) matches an entry. It says nothing about what a
// name resolves to: the proxy still refuses a name that resolves to a special
// address outside the IP/CIDR entries.
func (a *Allowlist) AllowsHost(host string) bool {
	h, addr, err := parseHost(host)
	switch {
	case err != nil:
		return false
	case addr.IsValid():
		return a.allowsAddr(addr)
	}
	return a.allowsName(h)
}

// allowsName matches a normalised, valid name against the name entries.
func (a *Allowlist) allowsName(h string) bool {
	if a == nil {
		return false
	}
	if a.exact[h] {
		return true
	}
	for i := 0; i < len(h); i++ {
		if h[i] == '.' && a.suffixes[h[i:]] {
			return true
		}
	}
	return false
}

// allowsAddr matches an address against the IP/CIDR entries. IPv4-mapped
// addresses match IPv4 entries.
func (a *Allowlist) allowsAddr(addr netip.Addr) bool {
	if a == nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range a.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
