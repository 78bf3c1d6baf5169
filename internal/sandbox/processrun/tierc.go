package processrun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
)

// prepareC prepares plan under bubblewrap. A nil launch comes with the
// failure Result.
//
// Tier C never shares the host's network namespace: the host's loopback
// services (PostgreSQL included) would be reachable. Egress modes none and
// preflight run with loopback only and a seccomp filter that refuses inet
// sockets. Strict egress with declared hosts runs the program under the
// init helper with a bridge to the egress proxy (startEgress); the
// sandbox still has no route out.
func (t *Tool) prepareC(ctx context.Context, plan *procinput.Plan, path string) (*launch, executor.Result) {
	dir, err := sandboxDir(plan.Root, plan.Dir)
	if err != nil {
		return nil, failure(procinput.KindInvalidInput, err.Error())
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
		return nil, failure(KindSpawnFailed, err.Error())
	}
	filter := sh.offline
	if proxied {
		filter = sh.proxied
	}
	bp := bwrap.Plan{
		Program: path, ProgramArgs: plan.Args, Env: env, Workspace: plan.Root, Dir: dir,
		UID: t.cfg.UID, GID: t.cfg.GID, Limits: t.cfg.Limits, Seccomp: filter, Host: sh.host,
	}
	if os.Geteuid() == 0 {
		// Never a sandbox that is root on the host: bwrap runs as UID,
		// which owns the workspace (see bwrap.Plan.HostUID).
		bp.HostUID, bp.HostGID = t.cfg.UID, t.cfg.GID
		if err := os.Lchown(plan.Root, int(t.cfg.UID), int(t.cfg.GID)); err != nil {
			return nil, failure(KindSpawnFailed, "workspace: "+err.Error())
		}
	}
	var eg *egressSession
	if proxied {
		if eg, err = t.startEgress(plan, &bp, path, env, dir); err != nil {
			return nil, failure(KindSpawnFailed, "strict egress: "+err.Error())
		}
	}
	enf := t.enforcementC(bp, plan, eg)
	// Never cancelled: supervise stops the tree itself, TERM before KILL.
	cmd, err := bp.Command(context.WithoutCancel(ctx))
	if err != nil {
		eg.close()
		return nil, withEnf(failure(KindSpawnFailed, err.Error()), enf)
	}
	l := &launch{cmd: cmd.Cmd, enf: enf}
	l.start = func() error {
		eg.serve(l.record)
		err := cmd.Start()
		eg.started()
		return err
	}
	l.abort = func() {
		cmd.Close()
		eg.close()
	}
	l.result = func(o outcome) executor.Result { return t.resultC(o, enf, eg) }
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

// resultC classifies a tier C process that ran. With the init (strict
// egress), its usage report gives the program's own exit status and
// resources; without it they are bwrap's.
func (t *Tool) resultC(o outcome, enf map[string]any, eg *egressSession) executor.Result {
	res := executor.Result{Enforcement: enf, Resources: map[string]int64{"wall_ms": o.wall.Milliseconds()}}
	code, sig := exitOf(o.state)
	// bwrap reports its own failures (a mount, the exec) on stderr, exit 1.
	spawnFailed := code == 1 && bytes.HasPrefix(o.stderr, []byte("bwrap: "))
	if eg == nil {
		addRusage(res.Resources, o.state)
		return t.finish(res, o, code, sig, spawnFailed)
	}
	usage, err := eg.finish(res.Resources)
	if err != nil {
		addRusage(res.Resources, o.state)
		return t.finish(res, o, code, sig, spawnFailed)
	}
	code, sig = usage.ExitCode, usage.Signal
	res.Resources["cpu_user_ms"] = usage.CPUUserMS
	res.Resources["cpu_sys_ms"] = usage.CPUSysMS
	res.Resources["max_rss_kb"] = usage.MaxRSSKB
	res.Resources["descendants_killed"] = int64(usage.DescendantsKilled)
	spawnFailed = code >= procinit.ExitInitFailed && code <= procinit.ExitNotFound && sig == 0 &&
		bytes.HasPrefix(o.stderr, []byte("sandbox init: "))
	return t.finish(res, o, code, sig, spawnFailed)
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
func (t *Tool) enforcementC(bp bwrap.Plan, plan *procinput.Plan, eg *egressSession) map[string]any {
	e := bp.Enforcement()
	e["seccomp"] = t.seccompSummary(bp.Seccomp)
	e["egress_mode"] = plan.EgressMode
	e["output_limit_bytes"] = t.cfg.OutputLimit
	e["kill_grace_ms"] = t.cfg.KillGrace.Milliseconds()
	e["workspace_host"] = plan.Root
	if eg == nil {
		e["egress"] = map[string]any{"mode": plan.EgressMode, "path": "none: loopback only, seccomp refuses inet sockets"}
		return e
	}
	e["network"] = "none: own network namespace, loopback only; egress only through the proxy socket"
	e["env"] = eg.envNames
	e["init"] = "procinit (execledger " + procinit.Hidden + "), executed from a descriptor; program " + eg.program
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
