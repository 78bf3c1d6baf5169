package audit

import (
	"slices"
	"strings"

	"github.com/execledger/execledger/internal/egress"
)

// class is one class of capabilities: what the skill asks for, the most
// it may ask for, and how the two compare.
type class struct {
	name       string // the checks' target
	label      string // before each entry outside Max, in the detail
	policy     string // the configuration key of its Max list
	asked, max []string
	wildcard   func(string) bool
	within     func(asked string, max []string, wildcards bool) bool
}

func classes(c Capabilities, m Max) []class {
	return []class{
		{"http_hosts", "http", "policy_http_hosts", c.HTTPHosts, m.HTTPHosts, wildHost, hostWithin},
		{"secrets", "secret", "policy_secrets", c.Secrets, m.Secrets, star, exactWithin},
		{"storage_prefixes", "storage", "policy_storage_prefixes", c.StoragePrefixes, m.StoragePrefixes, star, prefixWithin},
		{"channels", "channel", "policy_channels", c.Channels, m.Channels, star, exactWithin},
	}
}

// capabilities checks the request against the configuration.
func (r *Report) capabilities(c Capabilities, m Max) {
	roots := slices.Concat(c.FilesystemReadRoots, c.FilesystemWriteRoots)
	r.add("filesystem_capabilities", "filesystem", len(roots) == 0, "%s",
		orElse(roots, "requests filesystem roots, not supported by tier A: ", "requests none"))
	for _, cl := range classes(c, m) {
		r.wildcards(cl, c.WildcardOptIn, m.AllowWildcards)
	}
	for _, cl := range classes(c, m) {
		r.withinMax(cl, m.AllowWildcards)
	}
}

// wildcards fails a class's wildcard requests unless both the manifest
// opts in and the configuration allows them.
func (r *Report) wildcards(cl class, optIn, allowed bool) {
	wild := slices.DeleteFunc(slices.Clone(cl.asked), func(s string) bool { return !cl.wildcard(s) })
	if len(wild) == 0 {
		r.add("wildcards", cl.name, true, "requests no wildcard")
		return
	}
	r.add("wildcards", cl.name, optIn && allowed,
		"requests %s: a wildcard needs the manifest's wildcard_opt_in (%v) and the configuration's [skills] allow_wildcards (%v)",
		strings.Join(wild, ", "), optIn, allowed)
}

// withinMax lists a class's requests outside Max.
func (r *Report) withinMax(cl class, wildcards bool) {
	var outside []string
	for _, s := range cl.asked {
		if !cl.within(s, cl.max, wildcards) {
			outside = append(outside, cl.label+" "+s)
		}
	}
	if len(outside) > 0 {
		r.add("capabilities_within_max", cl.name, false, "outside the policy ([wasm] %s): %s", cl.policy, strings.Join(outside, ", "))
		return
	}
	r.add("capabilities_within_max", cl.name, true, "%d requested, each within [wasm] %s", len(cl.asked), cl.policy)
}

func star(s string) bool { return s == "*" }

// wildHost: "*", or a host entry the egress allowlist reads as every
// subdomain ("*.example.com", ".example.com").
func wildHost(s string) bool {
	return s == "*" || strings.HasPrefix(s, "*.") || strings.HasPrefix(s, ".")
}

func exactWithin(s string, max []string, _ bool) bool { return slices.Contains(max, s) }

// prefixWithin: a prefix Max lists, or one that extends it.
func prefixWithin(s string, max []string, _ bool) bool {
	return slices.ContainsFunc(max, func(p string) bool { return strings.HasPrefix(s, p) })
}

// hostWithin: listed, in the egress allowlist's normal form (case,
// trailing dot, "*." as "."), or, when wildcards are allowed, under a
// listed wildcard as the egress allowlist matches it (at a label
// boundary; a requested wildcard by its domain).
func hostWithin(s string, max []string, wildcards bool) bool {
	norm := normalHost(s)
	for _, m := range max {
		if normalHost(m) == norm {
			return true
		}
		if wildcards && wildHost(m) && coveredBy(m, strings.TrimPrefix(norm, ".")) {
			return true
		}
	}
	return false
}

// normalHost is h in the egress allowlist's normal form, or h lower-cased
// when it does not parse.
func normalHost(h string) string {
	if a, err := egress.ParseAllowlist([]string{h}); err == nil {
		if e := a.Entries(); len(e) == 1 {
			return e[0]
		}
	}
	return strings.ToLower(h)
}

func coveredBy(wildcard, host string) bool {
	a, err := egress.ParseAllowlist([]string{wildcard})
	return err == nil && a.AllowsHost(host)
}
