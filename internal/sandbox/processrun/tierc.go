package processrun

import (
	"bytes"
	"context"
	"strings"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/seccomp"
)

// prepareC prepares plan under bubblewrap. A nil launch comes with the
// failure Result.
func (t *Tool) prepareC(ctx context.Context, plan *procinput.Plan, path string) (*launch, executor.Result) {
	if plan.Dir != plan.Root {
		return nil, failure(procinput.KindInvalidInput, "tier C starts every process in the workspace root; a cwd below it is not supported yet")
	}
	// Tier C never shares the host network: the host's loopback services
	// (PostgreSQL included) would be reachable. Until egress goes through the
	// allowlisting proxy, every tier C run is offline, whatever the mode.
	network := false
	filter, err := seccomp.Build(seccomp.Options{AllowInet: network})
	if err != nil {
		return nil, failure(KindSpawnFailed, err.Error())
	}
	env := make([]string, 0, len(plan.Env))
	for _, kv := range plan.Env {
		if strings.HasPrefix(kv, "HOME=") {
			kv = "HOME=" + bwrap.WorkspaceDir
		}
		env = append(env, kv)
	}
	bp := bwrap.Plan{
		Program: path, ProgramArgs: plan.Args, Env: env, Workspace: plan.Root,
		Network: network, UID: t.cfg.UID, GID: t.cfg.GID, Seccomp: filter,
	}
	enf := t.enforcementC(bp, plan)
	// Never cancelled: supervise stops the tree itself, TERM before KILL.
	cmd, err := bp.Command(context.WithoutCancel(ctx))
	if err != nil {
		return nil, withEnf(failure(KindSpawnFailed, err.Error()), enf)
	}
	l := &launch{cmd: cmd, enf: enf, start: func() error { return bwrap.Start(cmd) },
		abort: func() { closeFiles(cmd.ExtraFiles) }}
	l.result = func(o outcome) executor.Result {
		res := executor.Result{Enforcement: enf, Resources: map[string]int64{"wall_ms": o.wall.Milliseconds()}}
		addRusage(res.Resources, o.state)
		code, sig := exitOf(o.state)
		// bwrap reports its own failures (a mount, the exec) on stderr, exit 1.
		spawnFailed := code == 1 && bytes.HasPrefix(o.stderr, []byte("bwrap: "))
		return t.finish(res, o, code, sig, spawnFailed)
	}
	return l, executor.Result{}
}

// enforcementC records tier C's isolation: bwrap's record, plus ours.
func (t *Tool) enforcementC(bp bwrap.Plan, plan *procinput.Plan) map[string]any {
	e := bp.Enforcement()
	e["seccomp"] = t.seccompSummary(bp.Seccomp)
	e["rlimits"] = "not applied in tier C (wall timeout and output limit only)"
	e["egress_mode"] = plan.EgressMode
	e["output_limit_bytes"] = t.cfg.OutputLimit
	e["kill_grace_ms"] = t.cfg.KillGrace.Milliseconds()
	e["workspace_host"] = plan.Root
	return e
}
