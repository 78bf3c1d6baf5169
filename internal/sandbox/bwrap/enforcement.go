//go:build linux

package bwrap

import (
	"slices"
	"strings"

	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// LimitsApplied says, for enforcement records, how a plan's Limits are set.
const LimitsApplied = "prlimit(2) on the sandbox's pid 1 while bwrap waits on --block-fd, before it forks the program " +
	"(by the daemon, from a thread with the host uid as its real uid when it may not otherwise); " +
	"soft equal to hard, inherited by every process in the sandbox"

// Enforcement describes what the plan enforces, for the attestation. It
// takes the host layout from the plan's Host, or probes it as Args does;
// environment values are left out, only their names are listed.
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
	host, err := p.host()
	if err != nil {
		host = &Host{}
	}
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
		"workdir":         p.workdir(),
		"mounts":          p.mounts(host),
	}
	if err != nil {
		e["mounts_error"] = err.Error()
	}
	if p.HostUID != 0 {
		e["host_uid"], e["host_gid"] = p.HostUID, p.HostGID
	}
	if p.ProgramFile != nil {
		e["program"] = "descriptor passed by the caller, executed as /proc/self/fd/N"
	}
	if p.Limits != (procinit.Limits{}) {
		e["limits"] = p.Limits
		e["rlimit_core"] = 0
		e["rlimits_applied"] = LimitsApplied
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
