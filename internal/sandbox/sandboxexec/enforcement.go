package sandboxexec

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// notEnforced are the limits this backend does not provide, recorded so
// that the attestation does not overclaim.
var notEnforced = []string{
	"resource limits: CPU time, memory and process count are not bounded by the profile",
	"user: the program runs as the executor's user",
	"process tree: a child that starts its own process group or session escapes the group kill",
}

// Enforcement describes what the plan enforces, for the attestation: the
// profile itself and its SHA-256, and the same rules as lists.
// Environment values are left out, only their names are listed. An
// invalid plan gives a record with profile_error and nothing it would
// claim.
func (p Plan) Enforcement() map[string]any {
	profile, err := p.Profile()
	if err != nil {
		return map[string]any{"backend": Backend, "profile_error": err.Error()}
	}
	sum := sha256.Sum256([]byte(profile))
	var envNames []string
	for _, kv := range p.env() {
		k, _, _ := strings.Cut(kv, "=")
		envNames = append(envNames, k)
	}
	slices.Sort(envNames)
	network := "none: network* denied"
	if p.Network {
		network = "outbound TCP to localhost:" + strconv.Itoa(p.ProxyPort) + " (egress proxy) only"
	}
	write := []string{p.Workspace}
	if p.TempDir != "" && p.TempDir != p.Workspace {
		write = append(write, p.TempDir)
	}
	return map[string]any{
		"backend":             Backend,
		"profile":             profile,
		"profile_sha256":      hex.EncodeToString(sum[:]),
		"default":             "deny",
		"exec":                p.executables(),
		"fork":                p.Fork,
		"file_read":           p.readable(),
		"file_write":          write,
		"file_map_executable": sortedSet(append(append(slices.Clone(systemCode), p.readOnly()...), p.executables()...)),
		"network":             network,
		"mach_lookup":         p.machServices(),
		"sysctl_read":         append(slices.Clone(sysctls), prefixed(sysctlPrefixes)...),
		"signal":              "same sandbox only",
		"env":                 envNames,
		"clearenv":            true,
		"workdir":             p.dir(),
		"kill":                "SIGKILL to the process group when the run ends",
		"not_enforced":        notEnforced,
	}
}

// readable returns every path the profile lets the process read, besides
// the read-write ones and the devices, sorted.
func (p Plan) readable() []string {
	all := append(slices.Clone(p.systemRead()), systemReadFiles...)
	all = append(all, p.readOnly()...)
	return sortedSet(append(all, p.executables()...))
}

// prefixed marks each name prefix with a trailing "*".
func prefixed(prefixes []string) []string {
	out := make([]string, len(prefixes))
	for i, pre := range prefixes {
		out[i] = pre + "*"
	}
	return out
}
