//go:build linux

package processrun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
	"github.com/execledger/execledger/ledger"
)

// prepareC prepares plan under bubblewrap, the program under the sandbox
// init (sandboxInit). A nil launch comes with the failure Result.
//
// Tier C never shares the host's network namespace: the host's loopback
// services (PostgreSQL included) would be reachable. Egress modes none and
// preflight run with loopback only and a seccomp filter that refuses inet
// sockets. Strict egress with declared hosts adds the init's bridge to the
// egress proxy (startEgress); the sandbox still has no route out.
func (t *Tool) prepareC(ctx context.Context, plan *procinput.Plan, path string) (*launch, executor.Result) {
	dir, err := sandboxDir(plan.Root, plan.Dir)
	if err != nil {
		return nil, failure(ledger.KindInvalidInput, err.Error())
	}
	env := make([]string, 0, len(plan.Env))
	for _, kv := range plan.Env {
		if strings.HasPrefix(kv, "HOME=") {
			kv = "HOME=" + bwrap.WorkspaceDir
		}
		env = append(env, kv)
	}
	proxied := plan.EgressMode == procinput.EgressStrict && len(plan.EgressHosts) > 0
	sh, err := t.sharedC()
	if err != nil {
		return nil, failure(ledger.KindSpawnFailed, err.Error())
	}
	filter := sh.offline
	if proxied {
		filter = sh.proxied
	}
	bp := bwrap.Plan{
		Workspace: plan.Root, Dir: dir,
		UID: t.cfg.UID, GID: t.cfg.GID, Limits: t.cfg.Limits, Seccomp: filter, Host: sh.host,
	}
	if os.Geteuid() == 0 {
		// Never a sandbox that is root on the host: bwrap runs as UID,
		// which owns the workspace (see bwrap.Plan.HostUID).
		bp.HostUID, bp.HostGID = t.cfg.UID, t.cfg.GID
		if err := os.Lchown(plan.Root, int(t.cfg.UID), int(t.cfg.GID)); err != nil {
			return nil, failure(ledger.KindSpawnFailed, "workspace: "+err.Error())
		}
	}
	// The init sets the limits on itself too: set on bubblewrap's pid 1
	// already, they stay in force should that exchange not have happened.
	spec := procinit.Spec{Path: path, Args: plan.Args, Env: env, Dir: dir, Limits: t.cfg.Limits}
	var eg *egressSession
	if proxied {
		if eg, err = t.startEgress(plan, &bp, &spec); err != nil {
			return nil, failure(ledger.KindSpawnFailed, "strict egress: "+err.Error())
		}
	}
	in, err := newSandboxInit(t.cfg.Self, spec, &bp)
	if err != nil {
		eg.close()
		return nil, failure(ledger.KindSpawnFailed, err.Error())
	}
	enf := t.enforcementC(bp, plan, spec, eg)
	cg, err := t.newLeaf(enf)
	if err != nil {
		in.close()
		eg.close()
		return nil, withEnf(failure(ledger.KindSpawnFailed, "cgroup leaf: "+err.Error()), enf)
	}
	// Never cancelled: supervise stops the tree itself, TERM before KILL.
	cmd, err := bp.Command(context.WithoutCancel(ctx))
	if err != nil {
		cg.abort()
		in.close()
		eg.close()
		return nil, withEnf(failure(ledger.KindSpawnFailed, err.Error()), enf)
	}
	cg.attach(cmd.Cmd)
	l := &launch{cmd: cmd.Cmd, enf: enf}
	l.start = func() error {
		eg.serve(l.record)
		err := cmd.Start()
		in.started()
		if err == nil {
			cg.started(cmd.Process.Pid)
		}
		return err
	}
	l.abort = func() {
		cmd.Close()
		in.close()
		eg.close()
		cg.abort()
	}
	l.result = func(o outcome) executor.Result { return t.resultC(o, enf, in, eg, cg) }
	return l, executor.Result{}
}

// sharedC is what every tier C call with the same ids shares, made at the
// first call: the bwrap Host, whose skeleton directory holds the sandbox's /etc
// and /dev, and the seccomp filter of each egress path.
type sharedC struct {
	host *bwrap.Host
	// offline refuses inet sockets; proxied allows them, for strict
	// egress, where the program reaches the init's bridge on 127.0.0.1.
	offline, proxied *seccomp.Filter
}

// sharedC returns the tool's sharedC, making it at the first call. The
// skeleton goes to $TMPDIR/execledger-bwrap-<euid>, next to the default
// EgressSocketDir; it is named after its content, so tools with the same
// ids share it on disk. A failure is not kept: the next call tries again.
func (t *Tool) sharedC() (*sharedC, error) {
	t.sharedMu.Lock()
	defer t.sharedMu.Unlock()
	if t.shared != nil {
		return t.shared, nil
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("execledger-bwrap-%d", os.Geteuid()))
	uid, gid := t.cfg.UID, t.cfg.GID
	host, err := bwrap.NewHost(base, uid, gid)
	if err != nil {
		return nil, fmt.Errorf("tier C sandbox: %w", err)
	}
	if os.Geteuid() == 0 { // bwrap runs as UID (prepareC)
		if err := host.SearchableBy(uid, gid); err != nil {
			return nil, fmt.Errorf("tier C sandbox: %w; point TMPDIR at a directory every user may search", err)
		}
	}
	sh := &sharedC{host: host}
	if sh.offline, err = seccomp.Build(seccomp.Options{}); err != nil {
		return nil, err
	}
	if sh.proxied, err = seccomp.Build(seccomp.Options{AllowInet: true}); err != nil {
		return nil, err
	}
	t.shared = sh
	return sh, nil
}

// resultC classifies a tier C process that ran, from the init's report:
// the program's exit status and signal, and the usage of everything that
// ran under the init. Without a report (the sandbox never got as far as
// the init, or the init was killed) the status is bubblewrap's and no CPU
// figures are recorded: bubblewrap's own are not the program's.
func (t *Tool) resultC(o outcome, enf map[string]any, in *sandboxInit, eg *egressSession, cg *leaf) executor.Result {
	res := executor.Result{Enforcement: enf, Resources: map[string]int64{"wall_ms": o.wall.Milliseconds()}}
	if eg != nil {
		eg.finish(res.Resources)
	}
	// Whatever is left in the sandbox dies with the leaf.
	cg.finish(res.Resources)
	usage, err := in.finish()
	if err != nil {
		e := exitOf(o.state)
		// bwrap reports its own failures (a mount, the exec) on stderr, exit 1.
		e.spawnFailed = e.code == 1 && bytes.HasPrefix(o.stderr, []byte("bwrap: "))
		e.unreported = !e.spawnFailed
		return t.finish(res, o, e)
	}
	addUsage(res.Resources, usage)
	return t.finish(res, o, initExit(usage, o.stderr))
}

// sandboxDir maps the checked working directory dir, which is root or
// below it, to the same place under /workspace.
func sandboxDir(root, dir string) (string, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("cwd %q is not in the workspace", dir)
	}
	return path.Join(bwrap.WorkspaceDir, filepath.ToSlash(rel)), nil
}

// enforcementC records tier C's isolation: bwrap's record, plus ours.
func (t *Tool) enforcementC(bp bwrap.Plan, plan *procinput.Plan, spec procinit.Spec, eg *egressSession) map[string]any {
	e := bp.Enforcement()
	e["seccomp"] = t.seccompSummary(bp.Seccomp)
	e["egress_mode"] = plan.EgressMode
	e["output_limit_bytes"] = t.cfg.OutputLimit
	e["kill_grace_ms"] = t.cfg.KillGrace.Milliseconds()
	e["workspace_host"] = plan.Root
	e["init"] = "procinit (execledger " + procinit.Hidden + "), executed from a descriptor; program " + spec.Path +
		"; not dumpable; a lifeline to the executor kills the program's tree when the executor dies"
	e["env"] = envNames(spec.Env)
	slices.Sort(e["env"].([]string))
	if eg == nil {
		e["egress"] = map[string]any{"mode": plan.EgressMode, "path": "none: loopback only, seccomp refuses inet sockets"}
		return e
	}
	e["network"] = "none: own network namespace, loopback only; egress only through the proxy socket"
	private := make([]string, len(t.cfg.EgressPrivateRanges))
	for i, p := range t.cfg.EgressPrivateRanges {
		private[i] = p.String()
	}
	ports := t.cfg.EgressPorts
	if len(ports) == 0 {
		ports = egress.DefaultPorts
	}
	e["egress"] = map[string]any{
		"mode":              plan.EgressMode,
		"path":              "program -> init's bridge on " + bridgeAddr + " in the sandbox -> " + bwrap.ProxyPath + " (bind-mounted host socket) -> egress proxy on the host",
		"proxy_socket":      bwrap.ProxyPath,
		"proxy_socket_host": eg.socket,
		"bridge":            bridgeAddr,
		"proxy_env":         proxyVars,
		"allowlist":         eg.allow.Entries(),
		"declared_hosts":    plan.EgressHosts,
		"private_ranges":    private,
		"ports":             ports,
		"checks":            "host allowlisted exactly; port allowed; every resolved address public or in private_ranges; dialled by address, no second lookup",
		"events":            "egress.connection per connection attempt, allowed or refused",
	}
	return e
}
