package processrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
)

// Tier C's strict egress.
const (
	// bridgeAddr is where, inside the sandbox's own network namespace, the
	// init's bridge to the egress proxy listens.
	bridgeAddr = "127.0.0.1:3128"
	// maxEgressEvents bounds the egress.connection events of one call;
	// past it connections are only counted (egress_events_dropped), so a
	// chatty program cannot push the call past the executor's event cap.
	maxEgressEvents = 500
)

// proxyVars are the environment variables that point clients at the
// bridge. curl reads only the lower-case http_proxy; NO_PROXY is set empty
// so that no host bypasses the proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

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

// egressSession is one call's egress proxy and the init that reaches it.
type egressSession struct {
	proxy  *egress.Proxy
	ln     net.Listener
	socket string
	allow  *egress.Allowlist
	red    func(string) string
	// Given to the sandbox; closed once bwrap has them.
	spec, self, usageW *os.File
	usageR             *os.File
	program            string
	envNames           []string

	cancel context.CancelFunc
	served chan struct{}

	mu                 sync.Mutex
	record             func(executor.Event)
	conns, refused     int64
	recorded, dropped  int64
	bytesUp, bytesDown int64
}

// startEgress opens the call's proxy on a fresh socket and turns bp into
// the init running the program with the bridge: the execledger binary
// (Config.Self) runs as bwrap's program from a descriptor, with the
// procinit spec on descriptor 3 and its usage report on 4.
func (t *Tool) startEgress(plan *procinput.Plan, bp *bwrap.Plan, program string, env []string, dir string) (*egressSession, error) {
	if t.cfg.Self == "" {
		return nil, errors.New("Config.Self, the execledger binary that runs the sandbox init, is not set")
	}
	allow, err := t.egressAllowlist(plan.EgressHosts)
	if err != nil {
		return nil, err
	}
	eg := &egressSession{allow: allow, program: program, red: t.red.String}
	ok := false
	defer func() {
		if !ok {
			eg.close()
		}
	}()
	eg.proxy, err = egress.New(egress.Config{
		Allow: allow, Ports: t.cfg.EgressPorts, PrivateRanges: t.cfg.EgressPrivateRanges,
		Resolver: t.cfg.EgressResolver, OnConnection: eg.onConnection,
	})
	if err != nil {
		return nil, err
	}
	if eg.socket, err = egressSocket(t.cfg.EgressSocketDir); err != nil {
		return nil, err
	}
	if eg.ln, err = eg.proxy.ListenUnix(eg.socket); err != nil {
		return nil, err
	}
	targetEnv := withProxy(env)
	eg.envNames = envNames(targetEnv)
	slices.Sort(eg.envNames)
	spec := procinit.Spec{Path: program, Args: plan.Args, Env: targetEnv, Dir: dir,
		Bridge: &procinit.Bridge{Listen: bridgeAddr, Socket: bwrap.ProxyPath}}
	if eg.spec, err = procinit.SpecFile(spec); err != nil {
		return nil, err
	}
	if eg.usageR, eg.usageW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if eg.self, err = os.Open(t.cfg.Self); err != nil {
		return nil, fmt.Errorf("sandbox init: %w", err)
	}
	bp.Program, bp.ProgramFile, bp.ProgramArgs = t.cfg.Self, eg.self, []string{procinit.Hidden}
	bp.ExtraFiles = []*os.File{eg.spec, eg.usageW}
	bp.Env = nil
	bp.ProxySocket = eg.socket
	ok = true
	return eg, nil
}

// egressAllowlist is what the proxy admits: exactly the declared hosts,
// which procinput has checked against the policy's allowlist (a declared
// host is allowlisted, and strict mode requires every host the arguments
// name to be declared). A policy entry "corp.local" admits a declared
// "api.corp.local" and the proxy then admits only "api.corp.local". A
// declared IP literal that is special (loopback, private, ...) is left out
// unless EgressPrivateRanges covers it: the proxy refuses it as
// private_address.
func (t *Tool) egressAllowlist(hosts []string) (*egress.Allowlist, error) {
	entries := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil && egress.IsSpecial(a) &&
			!slices.ContainsFunc(t.cfg.EgressPrivateRanges, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) }) {
			continue
		}
		entries = append(entries, h)
	}
	allow, err := egress.ParseAllowlist(entries)
	if err != nil {
		return nil, fmt.Errorf("declared hosts: %w", err)
	}
	return allow, nil
}

// egressSocket returns a fresh socket path in dir, which it creates 0711
// (traverse only) if missing. dir must be the daemon's and listable by
// nobody else: the socket's unguessable name is what keeps other local
// users, whom the socket's 0666 mode does not stop, from finding it.
func egressSocket(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return "", fmt.Errorf("egress socket directory %s is not a directory", dir)
	case int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("egress socket directory %s belongs to uid %d, not to this process", dir, st.Uid)
	case fi.Mode().Perm()&0o066 != 0:
		if err := os.Chmod(dir, 0o711); err != nil {
			return "", err
		}
	}
	var name [16]byte
	if _, err := rand.Read(name[:]); err != nil {
		return "", err
	}
	p := filepath.Join(dir, base64.RawURLEncoding.EncodeToString(name[:]))
	if len(p) > 107 {
		return "", fmt.Errorf("egress socket path %s is longer than a Unix socket address allows", p)
	}
	return p, nil
}

// withProxy returns env with every proxy variable pointing at the bridge.
func withProxy(env []string) []string {
	out := make([]string, 0, len(env)+len(proxyVars)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToLower(k), "_proxy") {
			out = append(out, kv)
		}
	}
	for _, k := range proxyVars {
		out = append(out, k+"=http://"+bridgeAddr)
	}
	return append(out, "NO_PROXY=", "no_proxy=")
}

// serve starts the proxy; record receives its events. Nil-safe.
func (eg *egressSession) serve(record func(executor.Event)) {
	if eg == nil {
		return
	}
	eg.mu.Lock()
	eg.record = record
	eg.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	eg.cancel, eg.served = cancel, make(chan struct{})
	go func() {
		defer close(eg.served)
		_ = eg.proxy.Serve(ctx, eg.ln)
	}()
}

// started closes the parent's copies of what only the sandbox needed.
// Nil-safe.
func (eg *egressSession) started() {
	if eg == nil {
		return
	}
	closeFiles(slices.DeleteFunc([]*os.File{eg.spec, eg.self, eg.usageW}, func(f *os.File) bool { return f == nil }))
	eg.spec, eg.self, eg.usageW = nil, nil, nil
}

// stop stops the proxy; once it returns, every connection's record is in.
func (eg *egressSession) stop() {
	if eg.served != nil {
		eg.cancel()
		<-eg.served
		eg.served = nil
	} else if eg.ln != nil {
		eg.ln.Close() // removes the socket
	}
	eg.ln = nil
}

// close releases everything of a session whose process never ran.
// Nil-safe.
func (eg *egressSession) close() {
	if eg == nil {
		return
	}
	eg.started()
	if eg.proxy != nil {
		eg.stop()
	}
	closeFiles(slices.DeleteFunc([]*os.File{eg.usageR}, func(f *os.File) bool { return f == nil }))
	eg.usageR = nil
}

// finish stops the proxy, adds its counts to resources and returns the
// init's usage report.
func (eg *egressSession) finish(resources map[string]int64) (procinit.Usage, error) {
	eg.stop()
	eg.mu.Lock()
	resources["egress_connections"] = eg.conns
	resources["egress_refused"] = eg.refused
	resources["egress_bytes_up"] = eg.bytesUp
	resources["egress_bytes_down"] = eg.bytesDown
	resources["egress_events_dropped"] = eg.dropped
	eg.mu.Unlock()
	eg.started()
	if eg.usageR == nil {
		return procinit.Usage{}, errors.New("no usage report")
	}
	// Every writer is gone with the sandbox: the read cannot block.
	defer func() {
		eg.usageR.Close()
		eg.usageR = nil
	}()
	return procinit.ReadUsage(eg.usageR)
}

// onConnection turns the proxy's record of one connection attempt into an
// egress.connection event.
func (eg *egressSession) onConnection(c egress.Connection) {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	eg.conns++
	if !c.Allowed {
		eg.refused++
	}
	eg.bytesUp += c.BytesUp
	eg.bytesDown += c.BytesDown
	if eg.record == nil || eg.recorded >= maxEgressEvents {
		eg.dropped++
		return
	}
	eg.recorded++
	payload := map[string]any{
		"host":        eg.red(c.Host),
		"port":        c.Port,
		"method":      c.Method,
		"address":     "",
		"allowed":     c.Allowed,
		"reason":      c.Reason,
		"end":         c.End,
		"bytes_up":    c.BytesUp,
		"bytes_down":  c.BytesDown,
		"duration_ms": c.Ended.Sub(c.Started).Milliseconds(),
		"started_at":  c.Started.UTC().Format(time.RFC3339Nano),
	}
	if c.Addr.IsValid() {
		payload["address"] = c.Addr.String()
	}
	if c.Detail != "" {
		payload["detail"] = eg.red(c.Detail)
	}
	eg.record(executor.Event{Type: "egress.connection", Payload: payload})
}
