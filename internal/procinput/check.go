package procinput

import "time"

// Check decides whether in may run under p and, if so, returns the Plan
// to spawn. The checks run in Palyra's order, and the first refusal is
// returned as an *Error:
//
//  1. shape: command, argument and host counts and sizes, timeouts;
//  2. executable: the allowlist, then the interpreter denylist;
//  3. no embedded command line (and no explicit cmd);
//  4. kill scope: no name- or group-based kills;
//  5. launch forms (beyond Palyra: its gap #1): env COMMAND, xargs, find
//     -exec, timeout, git -c core.pager=..., make SHELL=... and the like
//     need AllowInterpreters; even with it, a form whose command cannot be
//     read is refused, and every program a launcher starts meets steps 3
//     and 4 and the eval flags of step 8, recursively;
//  6. background: detached processes need Policy.AllowDetached;
//  7. workspace root and working directory;
//  8. interpreter guards: eval flags, embedded absolute paths, for the
//     command and for every program its launchers start;
//  9. argument scope;
//  10. egress.
//
// A Policy that cannot be used returns an error wrapping ErrInvalidPolicy.
func Check(in *Input, p Policy) (*Plan, error) {
	if in == nil {
		return nil, invalid(ReasonInputMalformed, "no input")
	}
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := preSpawnChecks(in, p); err != nil {
		return nil, err
	}
	w, err := openWorkspace(p.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	if err := p.checkPathOutside(w.root); err != nil {
		return nil, err
	}
	dir, err := w.dir(in.Cwd)
	if err != nil {
		return nil, err
	}
	if err := checkInterpreterArgs(w, dir, in.Command, in.Args); err != nil {
		return nil, err
	}
	if err := eachLaunched(in.Command, in.Args, p, func(cmd string, args []string) error {
		return checkInterpreterArgs(w, dir, cmd, args)
	}); err != nil {
		return nil, err
	}
	if err := checkArgScope(w, dir, in.Command, in.Args); err != nil {
		return nil, err
	}
	hosts, err := checkEgress(in, p)
	if err != nil {
		return nil, err
	}
	return newPlan(in, p, w.root, dir, hosts), nil
}

// preSpawnChecks are steps 1 to 6, which need no file system.
func preSpawnChecks(in *Input, p Policy) error {
	steps := []func() error{
		func() error { return checkShape(in, p) },
		func() error { return checkExecutable(in.Command, p) },
		func() error { return checkEmbeddedCommandLine(in.Command, in.Args) },
		func() error { return checkKillScope(in.Command, in.Args) },
		func() error { return checkLaunchForms(in.Command, in.Args, p) },
		func() error { return checkBackground(in.Background, p) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func checkBackground(b *Background, p Policy) error {
	if b != nil && b.Mode == BackgroundDetached && !p.AllowDetached {
		return capabilityDenied(ReasonDetachedDenied, "detached background processes outlive the run; the policy must set AllowDetached")
	}
	return nil
}

func newPlan(in *Input, p Policy, root, dir string, hosts []string) *Plan {
	plan := &Plan{
		Command:     in.Command,
		Args:        append([]string{}, in.Args...),
		Root:        root,
		Dir:         dir,
		Env:         buildEnv(p, root, programName(in.Command)),
		EgressMode:  p.EgressMode,
		EgressHosts: hosts,
		Timeout:     capMS(in.TimeoutMS, DefaultTimeout, p.MaxTimeout),
	}
	if b := in.Background; b != nil {
		plan.Background = b.Mode
		ms := b.LifetimeMS
		if ms == nil {
			ms = in.TimeoutMS
		}
		plan.Timeout = capMS(ms, p.DefaultBackgroundLifetime, p.MaxBackgroundLifetime)
	}
	return plan
}

// capMS returns min(ms or def, max) without overflowing.
func capMS(ms *int64, def, max time.Duration) time.Duration {
	d := def
	if ms != nil {
		if *ms >= max.Milliseconds() {
			return max
		}
		d = time.Duration(*ms) * time.Millisecond
	}
	return min(d, max)
}
