//go:build !linux

package processrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/redact"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/ledger"
)

// Defaults of Config's zero fields.
const DefaultOutputLimit = config.ProcessOutputLimit

// Config configures the tool off Linux, where only tier C runs, under the
// platform's backend (native.go): foreground calls, no background
// processes, workspaces kept.
type Config struct {
	// Tier must be "C".
	Tier string
	// WorkspaceRoot holds the per-run workspaces,
	// <WorkspaceRoot>/<principal>/<run_id>.
	WorkspaceRoot string
	// Policy is procinput's; WorkspaceRoot is filled per call.
	Policy procinput.Policy
	// Limits are applied where the backend has them: on Windows the
	// process count, each process's memory (AddressSpace) and user CPU
	// time; macOS's sandbox-exec has none, and its Enforcement record
	// says so.
	Limits procinit.Limits
	// OutputLimit is the combined stdout+stderr budget in bytes.
	OutputLimit int
	// WorkspaceTTL must be 0: deleting idle workspaces needs Linux.
	WorkspaceTTL time.Duration
	// Redactor redacts stored output; nil means redact.New with defaults.
	Redactor *redact.Redactor
}

// Tool is the process.run tool. It is safe for concurrent use.
type Tool struct {
	cfg Config
	be  nativeBackend
	red *redact.Redactor
}

var _ executor.Tool = (*Tool)(nil)

// New checks cfg against the platform's backend and returns the tool.
func New(cfg Config) (*Tool, error) {
	be, err := platformBackend()
	if err != nil {
		return nil, err
	}
	if err := be.checkConfig(cfg.Tier, cfg.Policy.EgressMode, cfg.WorkspaceTTL); err != nil {
		return nil, err
	}
	if err := available(); err != nil {
		return nil, fmt.Errorf("processrun: tier C: %w", err)
	}
	if cfg.WorkspaceRoot == "" || !filepath.IsAbs(cfg.WorkspaceRoot) {
		return nil, fmt.Errorf("processrun: WorkspaceRoot %q is not an absolute path", cfg.WorkspaceRoot)
	}
	cfg.WorkspaceRoot = filepath.Clean(cfg.WorkspaceRoot)
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.New(redact.Options{})
	}
	if err := os.MkdirAll(cfg.WorkspaceRoot, 0o711); err != nil {
		return nil, fmt.Errorf("processrun: workspace root: %w", err)
	}
	return &Tool{cfg: cfg, be: be, red: cfg.Redactor}, nil
}

// Close does nothing: no call outlives its Run here.
func (t *Tool) Close(context.Context) error { return nil }

// Name is "process.run".
func (t *Tool) Name() string { return "process.run" }

// Executor is the backend's label.
func (t *Tool) Executor() string { return t.be.executor }

// Tier is "C".
func (t *Tool) Tier() string { return "C" }

// SafeToRepeat is false: a process may have side effects.
func (t *Tool) SafeToRepeat() bool { return false }

// prepared is a call Prepare checked.
type prepared struct {
	in *procinput.Input
	ws string
}

// Prepare runs procinput's checks at claim time and the backend's
// refusals, and creates the call's workspace.
func (t *Tool) Prepare(_ context.Context, call executor.Call) (any, error) {
	in, err := procinput.Parse(call.Input)
	if err != nil {
		return nil, refusal(err)
	}
	ws, err := t.workspace(call)
	if err != nil {
		var pe *procinput.Error
		if errors.As(err, &pe) {
			return nil, refusal(err)
		}
		return nil, err
	}
	if _, err := t.check(in, ws); err != nil {
		return nil, err
	}
	return &prepared{in: in, ws: ws}, nil
}

// check runs procinput.Check and the backend's refusals.
func (t *Tool) check(in *procinput.Input, ws string) (*procinput.Plan, error) {
	pol := t.cfg.Policy
	pol.WorkspaceRoot = ws
	plan, err := procinput.Check(in, pol)
	if err != nil {
		return nil, refusal(err)
	}
	if r := t.be.refuse(plan); r != nil {
		return nil, r
	}
	return plan, nil
}

// Run executes one foreground call under the backend.
func (t *Tool) Run(ctx context.Context, call executor.Call) executor.Result {
	p, ok := call.Prepared.(*prepared)
	if !ok {
		v, err := t.Prepare(ctx, call)
		if err != nil {
			return executor.Refused(err)
		}
		p = v.(*prepared)
	}
	plan, err := t.check(p.in, p.ws)
	if err != nil {
		return executor.Refused(err)
	}
	program, err := nativeLookPath(plan.Command, plan.Env)
	if err != nil {
		return failure(ledger.KindSpawnFailed, err.Error())
	}
	out := newBudget(t.cfg.OutputLimit)
	end, enf, err := t.runBackend(ctx, plan, program, out)
	if err != nil {
		return notStarted(ctx, errors.Is(err, errTimedOut), err, enf)
	}
	return nativeResult(t.be, t.red, t.cfg.OutputLimit, out, end, enf)
}

// errTimedOut is the cause of a run's context when its timeout passed.
var errTimedOut = errors.New("timed out")

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
	parent := filepath.Join(t.cfg.WorkspaceRoot, call.Principal)
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
	return dir, nil
}
