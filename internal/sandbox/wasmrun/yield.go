package wasmrun

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/execledger/execledger/internal/wasm/meter"
)

// Fuel between a running call's yields (meter.Options.Yield), per engine:
// about a millisecond of the module's work on the compiler, a few on the
// interpreter. A yield is where a call that ran out of time or was
// cancelled ends, and where the Go runtime can preempt the goroutine that
// runs it: wazero's compiled code holds its thread until it calls out, so
// without yields a long call would also hold up every stop-the-world
// pause (the garbage collector's) of the whole executor.
const (
	yieldQuantumCompiler    = 1 << 20
	yieldQuantumInterpreter = 1 << 16
)

// instantiateYield links the host module a metered module's yield import
// (meter.YieldModule) resolves to.
func (r *runner) instantiateYield(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder(meter.YieldModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(r.yield), nil, []api.ValueType{api.ValueTypeI32}).
		Export(meter.YieldName).
		Instantiate(ctx)
	return err
}

// yield is called by a running module each time its fuel drops below its
// floor. It ends the call (returns 1, and the module traps) when the
// call's context ended or its deadline passed, checked here on the call's
// own goroutine rather than by one watching from outside; else it sets the
// floor a quantum lower and the module goes on.
func (r *runner) yield(ctx context.Context, mod api.Module, stack []uint64) {
	cc := callCapsFrom(ctx)
	stop := cc == nil || cc.done(ctx)
	if !stop {
		left, err := r.meter.left(mod)
		if err == nil {
			err = r.meter.setFloor(mod, max(0, left-r.quantum))
		}
		stop = err != nil
	}
	stack[0] = 0
	if stop {
		if cc != nil {
			cc.stopped = true
		}
		stack[0] = 1
	}
}

// startFloor sets a new instance's first floor, a quantum below its fuel.
func (r *runner) startFloor(mod api.Module, fuel int64) error {
	if !r.meter.yields() {
		return nil
	}
	return r.meter.setFloor(mod, max(0, fuel-r.quantum))
}
