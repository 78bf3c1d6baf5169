//go:build linux

package processrun

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/redact"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/cgroup"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
	"github.com/execledger/execledger/ledger"
)

// Defaults of Config's zero fields: the configuration's ([process],
// config.Default).
const (
	DefaultOutputLimit = config.ProcessOutputLimit
	DefaultKillGrace   = config.ProcessKillGrace
	DefaultUID         = config.ProcessUID
	DefaultGID         = config.ProcessGID
	chunkSize          = 4 << 10
)

// DefaultLimits are the rlimits of a zero Config.Limits. Processes is
// RLIMIT_NPROC, which the kernel counts per uid and user namespace: in
// tier B it bounds the processes of one run (its own uid), in tier C those
// of one sandbox.
var DefaultLimits = procinit.Limits{
	CPUSeconds: config.ProcessRlimitCPUSeconds,
	FileSize:   config.ProcessRlimitFileSize,
	OpenFiles:  config.ProcessRlimitOpenFiles,
	Processes:  config.ProcessRlimitProcesses,
}

// Config configures the tool.
type Config struct {
	// Tier is "B" or "C".
	Tier string
	// Self is the execledger binary (os.Executable()), re-executed as
	// the sandbox init of both tiers; its main must dispatch
	// procinit.Hidden to procinit.Main. Tier C executes it from a
	// descriptor inside the sandbox, as Config.UID.
	Self string
	// WorkspaceRoot holds the per-run workspaces; created 0711 (traverse
	// only) if missing, each run's directory 0700.
	WorkspaceRoot string
	// Policy is procinput's; WorkspaceRoot is filled per call.
	Policy procinput.Policy
	// Limits are the rlimits (tier B; tier C also applies them, see
	// Enforcement); a zero value means DefaultLimits. AddressSpace is off
	// by default.
	Limits procinit.Limits
	// OutputLimit is the combined stdout+stderr budget in bytes.
	OutputLimit int
	// KillGrace is the time between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// UID and GID are tier C's: the sandbox's uid inside, and bubblewrap's
	// on the host when the daemon runs as root; 0 means 65534. Tier B uses
	// per-run uids (UIDBase, UIDCount).
	UID, GID uint32
	// Background enables background processes; see BackgroundConfig.
	Background BackgroundConfig
	// UIDBase and UIDCount are tier B's per-run uid range when the daemon
	// runs as root: each run's workspace, and the run's processes, get a
	// uid (and the gid of the same number) of [UIDBase,
	// UIDBase+UIDCount) of their own (see uid.go); UID and GID then do not
	// apply to tier B. 0 means DefaultUIDBase and DefaultUIDCount.
	UIDBase, UIDCount uint32
	// Cgroups is the use of cgroup v2 (see cgroup.go), in both tiers:
	// CgroupsAuto (the default: a leaf per process where the host offers a
	// writable cgroup2 hierarchy, and the reason recorded where not),
	// CgroupsRequired (New fails without one) or CgroupsOff. In tier C the
	// leaf is what ends a sandbox that outlived a killed executor while
	// bubblewrap was setting it up (Tool.SweepOrphans).
	Cgroups string
	// CgroupOptions locate the cgroup parent directory; see
	// cgroup.Options.
	CgroupOptions cgroup.Options
	// CgroupLimits are set on each process's leaf for the controllers the
	// hierarchy offers; a zero value means DefaultCgroupLimits.
	CgroupLimits cgroup.Limits
	// cgroups is what New made of Cgroups.
	cgroups *cgroupState
	// EgressPorts are the destination ports strict egress may reach in
	// tier C; nil means egress.DefaultPorts (80 and 443).
	EgressPorts []int
	// EgressPrivateRanges are the special ranges (loopback, private,
	// link-local, ...; see egress.IsSpecial) that a declared host may
	// resolve into, or be as an IP literal, under strict egress in tier C.
	// None by default, so the host's own services stay out of reach.
	EgressPrivateRanges []netip.Prefix
	// EgressResolver resolves declared host names for the egress proxy;
	// nil means the host's resolver.
	EgressResolver egress.Resolver
	// EgressSocketDir holds tier C's per-call egress proxy sockets. It is
	// created 0711 if missing and must belong to the daemon; each socket
	// has a random name, which only the daemon can list. Default
	// $TMPDIR/execledger-egress-<euid>.
	EgressSocketDir string
	// Redactor redacts stored output; nil means redact.New with defaults.
	// Register run secrets with its AddSecret.
	Redactor *redact.Redactor
	// Workspaces configures the deletion of idle runs' workspaces
	// (workspace.go); a zero value keeps them forever.
	Workspaces WorkspaceConfig
}

// Tool is the process.run tool. It is safe for concurrent use.
type Tool struct {
	bg     *background // nil: background processes refused
	sweep  *sweeper    // nil: workspaces are kept forever
	cfg    Config
	filter *seccomp.Filter // tier B's filter, for the enforcement record

	sharedMu sync.Mutex
	shared   *sharedC // tier C's per-host set-up, made at the first call
	red      *redact.Redactor
}

var _ executor.Tool = (*Tool)(nil)

// New checks cfg and returns the tool: both tiers need Self, tier B a
// root daemon, tier C bwrap.
func New(cfg Config) (*Tool, error) {
	switch cfg.Tier {
	case "B":
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("processrun: tier B needs a root daemon: it runs each run's programs under a uid of their own with a private /tmp; as uid %d every program would run as the daemon itself, able to read its signing key and signal it. Use tier C, which needs no privileges", os.Geteuid())
		}
	case "C":
		if _, _, err := bwrap.Available(); err != nil {
			return nil, fmt.Errorf("processrun: tier C: %w", err)
		}
	default:
		return nil, fmt.Errorf("processrun: tier %q is not B or C", cfg.Tier)
	}
	if cfg.Self == "" || !filepath.IsAbs(cfg.Self) {
		return nil, fmt.Errorf("processrun: tier %s needs Self, the absolute path of the execledger binary (the sandbox init)", cfg.Tier)
	}
	fi, err := os.Stat(cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("processrun: sandbox init: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("processrun: sandbox init %s is not an executable file", cfg.Self)
	}
	if cfg.WorkspaceRoot == "" || !filepath.IsAbs(cfg.WorkspaceRoot) {
		return nil, fmt.Errorf("processrun: WorkspaceRoot %q is not an absolute path", cfg.WorkspaceRoot)
	}
	cfg.WorkspaceRoot = filepath.Clean(cfg.WorkspaceRoot)
	if cfg.Limits == (procinit.Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.UID == 0 {
		cfg.UID = DefaultUID
	}
	if cfg.GID == 0 {
		cfg.GID = DefaultGID
	}
	if cfg.EgressSocketDir == "" {
		cfg.EgressSocketDir = filepath.Join(os.TempDir(), fmt.Sprintf("execledger-egress-%d", os.Geteuid()))
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.New(redact.Options{})
	}
	if cfg.Tier == "B" {
		if err := cfg.uidDefaults(); err != nil {
			return nil, err
		}
	}
	if err := cfg.cgroupDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.workspaceDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.WorkspaceRoot, 0o711); err != nil {
		return nil, fmt.Errorf("processrun: workspace root: %w", err)
	}
	f, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		return nil, fmt.Errorf("processrun: seccomp: %w", err)
	}
	t := &Tool{cfg: cfg, filter: f, red: cfg.Redactor}
	if cfg.Background.Recorder != nil {
		if t.bg, err = newBackground(t, cfg.Background); err != nil {
			return nil, err
		}
	}
	t.sweep = startSweeper(t)
	return t, nil
}

// Close stops the workspace sweep and the background processes this tool
// supervises and waits, until ctx ends, for their ends to be recorded.
// Calls after Close may not start background processes.
func (t *Tool) Close(ctx context.Context) error {
	t.sweep.stop()
	if t.bg == nil {
		return nil
	}
	return t.bg.close(ctx)
}

// Name is "process.run".
func (t *Tool) Name() string { return "process.run" }

// Executor is the label recorded in events.
func (t *Tool) Executor() string {
	if t.cfg.Tier == "C" {
		return "sandbox_tier_c_linux_bubblewrap"
	}
	return "sandbox_tier_b"
}

// Tier is "B" or "C".
func (t *Tool) Tier() string { return t.cfg.Tier }

// SafeToRepeat is false: a process may have side effects.
func (t *Tool) SafeToRepeat() bool { return false }

func (t *Tool) backend() string {
	if t.cfg.Tier == "C" {
		return "linux_bubblewrap"
	}
	return "procinit_rlimit_seccomp"
}

// Reasons of this tool's own refusals, beside procinput's.
const (
	reasonBackgroundDisabled = "process.background_disabled" // capability_denied
	reasonStrictEgressTierB  = "egress.strict_needs_tier_c"  // egress_denied
)

// prepared is a call Prepare checked: the parsed input and its workspace,
// or the failure Run is to report (a workspace or a policy the executor
// could not use: the executor's fault, not the request's, so not a
// refusal).
type prepared struct {
	in   *procinput.Input
	ws   string
	fail *executor.Result
}

// Prepare runs procinput's checks at claim time, before the call's budget
// is charged: the input's shape, the executable allowlist and launch
// forms, the workspace scope of its paths and arguments, and egress. It
// creates the call's workspace (and, in tier B, gives the run its uid).
// A refusal denies the request. Run checks the file system again just
// before it spawns, since the workspace may change in between.
func (t *Tool) Prepare(_ context.Context, call executor.Call) (any, error) {
	in, err := procinput.Parse(call.Input)
	if err != nil {
		return nil, refusal(err)
	}
	if in.Background != nil && t.bg == nil {
		return nil, &executor.Refusal{Kind: ledger.KindCapabilityDenied, Reason: reasonBackgroundDisabled,
			Message: "background processes are not enabled on this executor (they need its ledger connection); run in the foreground"}
	}
	ws, err := t.workspace(call)
	if err != nil {
		var pe *procinput.Error
		if errors.As(err, &pe) {
			return nil, refusal(err)
		}
		f := failure(ledger.KindSpawnFailed, "workspace: "+err.Error())
		return &prepared{fail: &f}, nil
	}
	_, fail, err := t.check(in, ws)
	if err != nil {
		return nil, err
	}
	return &prepared{in: in, ws: ws, fail: fail}, nil
}

// check runs procinput.Check on in within workspace ws: a refusal is an
// error, a policy the executor cannot use a failure.
func (t *Tool) check(in *procinput.Input, ws string) (*procinput.Plan, *executor.Result, error) {
	pol := t.cfg.Policy
	pol.WorkspaceRoot = ws
	plan, err := procinput.Check(in, pol)
	if errors.Is(err, procinput.ErrInvalidPolicy) {
		f := failure(ledger.KindSpawnFailed, "process.run is misconfigured: "+err.Error())
		return nil, &f, nil
	}
	if err != nil {
		return nil, nil, refusal(err)
	}
	if plan.EgressMode == procinput.EgressStrict && t.cfg.Tier == "B" {
		return nil, nil, &executor.Refusal{Kind: ledger.KindEgressDenied, Reason: reasonStrictEgressTierB,
			Message: "strict egress cannot be enforced in tier B; the policy must use tier C or egress mode none/preflight"}
	}
	return plan, nil, nil
}

// Run executes one call: see the package documentation.
func (t *Tool) Run(ctx context.Context, call executor.Call) executor.Result {
	p, ok := call.Prepared.(*prepared)
	if !ok {
		v, err := t.Prepare(ctx, call)
		if err != nil {
			return executor.Refused(err)
		}
		p = v.(*prepared)
	}
	if p.fail != nil {
		return *p.fail
	}
	// Again, against the workspace as it is now.
	plan, bad, err := t.check(p.in, p.ws)
	if err != nil {
		return executor.Refused(err)
	}
	if bad != nil {
		return *bad
	}
	path, err := lookPath(plan.Command, plan.Env)
	if err != nil {
		return failure(ledger.KindSpawnFailed, err.Error())
	}
	// Pdeathsig fires when the thread that started the child exits: keep
	// this goroutine on its thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var l *launch
	var fail executor.Result
	if t.cfg.Tier == "C" {
		l, fail = t.prepareC(ctx, plan, path)
	} else {
		l, fail = t.prepareB(plan, path)
	}
	if l == nil {
		return fail
	}
	if plan.Background != "" {
		return t.bg.start(ctx, call, plan, l)
	}
	return t.foreground(ctx, l, plan.Timeout)
}

// workspace creates and returns the call's workspace directory.
func (t *Tool) workspace(call executor.Call) (string, error) {
	if err := component("principal", call.Principal); err != nil {
		return "", err
	}
	run := reqPrefix + call.RequestID.String()
	if call.RunID != "" {
		if err := component("run_id", call.RunID); err != nil {
			return "", err
		}
		if strings.HasPrefix(call.RunID, reqPrefix) || strings.HasPrefix(call.RunID, trashPrefix) {
			return "", &procinput.Error{Kind: ledger.KindInvalidInput, Reason: "workspace_name_invalid",
				Message: "run ids starting with " + reqPrefix + " or " + trashPrefix + " are reserved"}
		}
		run = call.RunID
	}
	// Under the root's lock, as the workspace sweep decides and renames
	// (workspace.go): the directory found here is not being deleted, or a
	// fresh one is made.
	unlock, err := lockDir(t.cfg.WorkspaceRoot)
	if err != nil {
		return "", err
	}
	defer unlock()
	parent := filepath.Join(t.cfg.WorkspaceRoot, call.Principal)
	// 0711: the sandbox uid may traverse to its own run but not list
	// the others.
	if err := os.Mkdir(parent, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	dir := filepath.Join(parent, run)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	// Tier B runs the program as the run's own uid, which owns its
	// workspace (uid.go). Tier C hands the workspace to its host uid in
	// prepareC.
	if t.cfg.Tier == "B" && os.Geteuid() == 0 {
		if err := t.assignUID(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// lookPath finds command in the PATH of env: an absolute, executable
// regular file.
func lookPath(command string, env []string) (string, error) {
	path := procinput.DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, command)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %s", command, path)
}
