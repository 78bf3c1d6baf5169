//go:build linux

package processrun

import (
	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/ledger"
)

// prepareB prepares plan under the tier B init: as the run's own uid
// (uid.go), in a cgroup leaf of its own where the host offers one
// (cgroup.go). A nil launch comes with the failure Result.
func (t *Tool) prepareB(plan *procinput.Plan, path string) (*launch, executor.Result) {
	spec := procinit.Spec{Path: path, Args: plan.Args, Env: plan.Env, Dir: plan.Dir, Limits: t.cfg.Limits,
		Seccomp: true, DenyUnixSockets: true, PrivateTmp: true, Keep: []string{plan.Root}}
	ids, err := t.runCredentials(plan.Root)
	if err != nil {
		return nil, failure(ledger.KindSpawnFailed, err.Error())
	}
	spec.UID, spec.GID = ids.uid, ids.gid
	enf := t.enforcementB(spec, ids)
	cg, err := t.newLeaf(enf)
	if err != nil {
		return nil, withEnf(failure(ledger.KindSpawnFailed, "cgroup leaf: "+err.Error()), enf)
	}
	cmd, err := procinit.Command(t.cfg.Self, spec)
	if err != nil {
		cg.abort()
		return nil, withEnf(failure(ledger.KindSpawnFailed, err.Error()), enf)
	}
	readUsage, err := procinit.WithUsage(cmd)
	if err != nil {
		cmd.ExtraFiles[0].Close()
		cg.abort()
		return nil, withEnf(failure(ledger.KindSpawnFailed, err.Error()), enf)
	}
	cg.attach(cmd)
	l := &launch{cmd: cmd, enf: enf}
	l.start = func() error {
		err := cmd.Start()
		cmd.ExtraFiles[0].Close()
		if err == nil {
			cg.started(cmd.Process.Pid)
		}
		return err
	}
	l.abort = func() {
		_, _ = readUsage()
		cg.abort()
	}
	l.result = func(o outcome) executor.Result {
		res := executor.Result{Enforcement: enf, Resources: map[string]int64{"wall_ms": o.wall.Milliseconds()}}
		e := exitOf(o.state)
		if usage, err := readUsage(); err == nil {
			addUsage(res.Resources, usage)
			e = initExit(usage, o.stderr)
		} else {
			// The init's own rusage: itself and the children it reaped.
			addRusage(res.Resources, o.state)
			e.unreported = true
		}
		// Whatever escaped the init dies with the leaf.
		cg.finish(res.Resources)
		return t.finish(res, o, e)
	}
	return l, executor.Result{}
}

// enforcementB records tier B's limits and isolation; newLeaf adds
// "cgroup".
func (t *Tool) enforcementB(spec procinit.Spec, ids runIDs) map[string]any {
	nproc := "run: RLIMIT_NPROC counts the processes of the run's own uid"
	if !ids.perRun {
		nproc = "daemon uid: RLIMIT_NPROC counts every process of the daemon's uid, and the kernel does not enforce it for root"
	}
	enf := map[string]any{
		"backend":            t.backend(),
		"limits":             spec.Limits,
		"rlimit_core":        0,
		"rlimit_nproc_scope": nproc,
		"seccomp":            t.seccompSummary(t.filter),
		"no_new_privs":       true,
		"child_subreaper":    true,
		"env":                envNames(spec.Env),
		"network":            "seccomp refuses inet sockets",
		"unix_sockets":       "seccomp refuses socket(AF_UNIX): the host's Unix sockets, abstract ones included, are out of reach; socketpair stays",
		"private_tmp":        map[string]any{"dirs": procinit.PrivateDirs, "fs": "tmpfs, per process, in a mount namespace of its own"},
		"output_limit_bytes": t.cfg.OutputLimit,
		"kill_grace_ms":      t.cfg.KillGrace.Milliseconds(),
		"workspace":          spec.Dir,
	}
	for k, v := range t.uidRecord(ids) {
		enf[k] = v
	}
	return enf
}
