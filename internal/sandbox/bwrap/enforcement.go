package bwrap

import (
	"slices"
	"strings"
)

// Enforcement describes what the plan enforces, for the attestation. It
// reads the host layout as Args does; environment values are left out,
// only their names are listed.
func (p Plan) Enforcement() map[string]any {
	uid, gid := p.ids()
	namespaces := []string{"user", "pid", "mount", "ipc", "uts", "cgroup"}
	network := "none: own network namespace, loopback only"
	if !p.Network {
		namespaces = append(namespaces, "net")
	} else {
		network = "host network namespace"
	}
	var envNames []string
	for _, kv := range p.env() {
		k, _, _ := strings.Cut(kv, "=")
		envNames = append(envNames, k)
	}
	slices.Sort(envNames)
	host, err := probeHost()
	e := map[string]any{
		"backend":         "linux_bubblewrap",
		"namespaces":      namespaces,
		"disable_userns":  true,
		"new_session":     true,
		"die_with_parent": true,
		"no_new_privs":    true,
		"cap_drop":        "ALL",
		"uid":             uid,
		"gid":             gid,
		"env":             envNames,
		"clearenv":        true,
		"network":         network,
		"root":            "read-only tmpfs",
		"workdir":         WorkspaceDir,
		"mounts":          p.mounts(host),
	}
	if err != nil {
		e["mounts_error"] = err.Error()
	}
	if p.ProxySocket != "" {
		e["egress_proxy"] = ProxyPath
	}
	if p.Seccomp == nil {
		e["seccomp"] = "none"
	} else {
		e["seccomp"] = map[string]any{
			"arch":       p.Seccomp.Arch(),
			"allow_inet": p.Seccomp.Options().AllowInet,
			"rules":      p.Seccomp.Rules(),
		}
	}
	return e
}
