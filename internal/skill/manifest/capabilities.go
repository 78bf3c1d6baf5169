package manifest

import (
	"net/netip"
	"regexp"
	"strings"

	"github.com/execledger/execledger/internal/egress"
)

var (
	secretPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	channelPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,127}$`)
)

const maxPrefixLen = 128

const fsRefused = "filesystem capabilities are not supported by tier A (no preopened directories)"

func (v *validator) capabilities(t *table) Capabilities {
	optIn := t.boolean("wildcard_opt_in")
	c := Capabilities{
		HTTPEgressAllowlist: t.list("http_egress_allowlist", v.entry(checkHost, optIn)),
		Secrets:             t.list("secrets", v.entry(checkSecret, optIn)),
		StoragePrefixes:     t.list("storage_prefixes", v.entry(checkPrefix, optIn)),
		Channels:            t.list("channels", v.entry(checkChannel, optIn)),
		WildcardOptIn:       optIn,
	}
	c.FilesystemReadRoots, c.FilesystemWriteRoots = v.filesystem(t.sub("filesystem"))
	t.unknown()
	return c
}

// filesystem refuses any root: tier A links no WASI file system.
func (v *validator) filesystem(t *table) (read, write []string) {
	refuse := func(at path, _ string) bool {
		v.fail(at, fsRefused)
		return false
	}
	read, write = t.list("read_roots", refuse), t.list("write_roots", refuse)
	t.unknown()
	return read, write
}

// entry checks a capability list's entries: check's syntax, no wildcard
// without wildcard_opt_in, no entry twice.
func (v *validator) entry(check func(string) string, optIn bool) func(path, string) bool {
	seen := map[string]bool{}
	return func(at path, s string) bool {
		switch why := check(s); {
		case why != "":
			v.fail(at, "%q is %s", s, why)
		case isWildcard(s) && !optIn:
			v.fail(at, "%q is a wildcard, refused unless wildcard_opt_in = true", s)
		case seen[s]:
			v.fail(at, "%q is listed twice", s)
		default:
			seen[s] = true
			return true
		}
		return false
	}
}

// checkHost accepts a host as the egress proxy writes it (lower case, no
// trailing dot, no port, an IP literal in canonical form without
// brackets), "*", or "*." and a name of two labels or more.
func checkHost(s string) string {
	if s == "*" {
		return ""
	}
	name, wild := strings.CutPrefix(s, "*.")
	if h, err := egress.ParseHost(name); err != nil || h != name {
		return "not a lower-case host name or IP address (no scheme, port, path or trailing dot; *.domain for a wildcard)"
	}
	if _, err := netip.ParseAddr(name); wild && (err == nil || !strings.Contains(name, ".")) {
		return "not a wildcard this Execledger allows (*.domain, where domain has two labels or more)"
	}
	return ""
}

func checkSecret(s string) string {
	if s == "*" || secretPattern.MatchString(s) {
		return ""
	}
	return "not a secret name (letters, digits and _, not starting with a digit; at most 128)"
}

// checkPrefix accepts 1 to 128 bytes of printable ASCII without "*", or
// "*" alone (any key).
func checkPrefix(s string) string {
	if s == "*" {
		return ""
	}
	if s == "" || len(s) > maxPrefixLen || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '*' }) >= 0 {
		return "not a storage prefix (1 to 128 bytes of printable ASCII without *; \"*\" alone for any key)"
	}
	return ""
}

func checkChannel(s string) string {
	if s == "*" || channelPattern.MatchString(s) {
		return ""
	}
	return "not a channel name (lower-case letters, digits, _ . and -; at most 128)"
}
