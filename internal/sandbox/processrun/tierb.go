package processrun

import (
	"bytes"
	"os"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// prepareB prepares plan under the tier B init. A nil launch comes with
// the failure Result.
func (t *Tool) prepareB(plan *procinput.Plan, path string) (*launch, executor.Result) {
	spec := procinit.Spec{Path: path, Args: plan.Args, Env: plan.Env, Dir: plan.Dir, Limits: t.cfg.Limits, Seccomp: true}
	if os.Geteuid() == 0 {
		spec.UID, spec.GID = t.cfg.UID, t.cfg.GID
	}
	enf := t.enforcementB(spec)
	cmd, err := procinit.Command(t.cfg.Self, spec)
	if err != nil {
		return nil, withEnf(failure(KindSpawnFailed, err.Error()), enf)
	}
	readUsage, err := procinit.WithUsage(cmd)
	if err != nil {
		cmd.ExtraFiles[0].Close()
		return nil, withEnf(failure(KindSpawnFailed, err.Error()), enf)
	}
	l := &launch{cmd: cmd, enf: enf}
	l.start = func() error {
		err := cmd.Start()
		cmd.ExtraFiles[0].Close()
		return err
	}
	l.abort = func() { _, _ = readUsage() }
	l.result = func(o outcome) executor.Result {
		usage, uerr := readUsage()
		code, sig := exitOf(o.state)
		res := executor.Result{Enforcement: enf, Resources: map[string]int64{"wall_ms": o.wall.Milliseconds()}}
		if uerr == nil {
			code, sig = usage.ExitCode, usage.Signal
			res.Resources["cpu_user_ms"] = usage.CPUUserMS
			res.Resources["cpu_sys_ms"] = usage.CPUSysMS
			res.Resources["max_rss_kb"] = usage.MaxRSSKB
			res.Resources["descendants_killed"] = int64(usage.DescendantsKilled)
		} else {
			addRusage(res.Resources, o.state)
		}
		spawnFailed := uerr == nil && code >= procinit.ExitInitFailed && code <= procinit.ExitNotFound && sig == 0 &&
			bytes.HasPrefix(o.stderr, []byte("sandbox init: "))
		return t.finish(res, o, code, sig, spawnFailed)
	}
	return l, executor.Result{}
}

// enforcementB records tier B's limits and isolation.
func (t *Tool) enforcementB(spec procinit.Spec) map[string]any {
	return map[string]any{
		"backend":            t.backend(),
		"limits":             spec.Limits,
		"rlimit_core":        0,
		"seccomp":            t.seccompSummary(t.filter),
		"no_new_privs":       true,
		"uid":                spec.UID,
		"gid":                spec.GID,
		"child_subreaper":    true,
		"env":                envNames(spec.Env),
		"network":            "seccomp refuses inet sockets",
		"output_limit_bytes": t.cfg.OutputLimit,
		"kill_grace_ms":      t.cfg.KillGrace.Milliseconds(),
		"workspace":          spec.Dir,
	}
}
