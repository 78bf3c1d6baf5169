//go:build linux

package processrun

import (
	"errors"
	"fmt"
	"os"

	"github.com/execledger/execledger/internal/sandbox/bwrap"
	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// sandboxInit is the procinit init that every tier C program runs under,
// inside bubblewrap: Config.Self executed from a descriptor (its path need
// not be visible in the sandbox), its spec on descriptor 3, its usage
// report on 4 and its lifeline on 5.
//
// Without it, what the executor waits for is bubblewrap's monitor, which
// exits as soon as the sandbox's pid 1 reports the program's status
// through an eventfd, without reaping that pid 1: the monitor's rusage is
// its own, and the program's status comes as 128+signal, a number a
// program may also exit with. The init reaps the program and everything it
// starts and reports their exit status, signal and usage itself.
//
// The lifeline ties the sandbox to this process, which bubblewrap's
// --die-with-parent does not do throughout: bubblewrap's sandbox pid 1 sets
// its parent-death signal only after its setup, and its parent is the
// monitor, not the executor.
type sandboxInit struct {
	// Given to the sandbox; closed once bwrap has them.
	self, spec, usageW, lifeR *os.File
	usageR                    *os.File
	// lifeW is the lifeline: held until the sandbox has ended, closed by
	// the kernel when this process dies.
	lifeW *os.File
}

// newSandboxInit opens what the init needs and turns bp into the init
// running spec: bp's program becomes self, its files the init's
// descriptors, its environment the init's own (the program's is in the
// spec).
func newSandboxInit(self string, spec procinit.Spec, bp *bwrap.Plan) (in *sandboxInit, err error) {
	if self == "" {
		return nil, errors.New("Config.Self, the execledger binary that runs the sandbox init, is not set")
	}
	spec.Lifeline = true
	in = &sandboxInit{}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	if in.spec, err = procinit.SpecFile(spec); err != nil {
		return nil, err
	}
	if in.usageR, in.usageW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if in.lifeR, in.lifeW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if in.self, err = os.Open(self); err != nil {
		return nil, fmt.Errorf("sandbox init: %w", err)
	}
	bp.Program, bp.ProgramFile, bp.ProgramArgs = self, in.self, []string{procinit.Hidden}
	bp.ExtraFiles = []*os.File{in.spec, in.usageW, in.lifeR}
	// The init needs no parallelism, and its threads count against the
	// sandbox's RLIMIT_NPROC: one P keeps them to about seven, not nine.
	bp.Env = []string{"GOMAXPROCS=1"}
	return in, nil
}

// started closes the parent's copies of what only the sandbox needed.
func (in *sandboxInit) started() {
	for _, f := range []**os.File{&in.self, &in.spec, &in.usageW, &in.lifeR} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// finish returns the init's usage report, once the sandbox has ended, and
// cuts the lifeline.
func (in *sandboxInit) finish() (procinit.Usage, error) {
	in.started()
	defer in.close()
	if in.usageR == nil {
		return procinit.Usage{}, errors.New("no usage report")
	}
	// The init and bubblewrap, which closes every descriptor it does not
	// pass on, are gone: the read cannot block.
	return procinit.ReadUsage(in.usageR)
}

// close releases everything, the lifeline included.
func (in *sandboxInit) close() {
	in.started()
	for _, f := range []**os.File{&in.usageR, &in.lifeW} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}
