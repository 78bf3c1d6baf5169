package wasmrun

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero/api"
)

// Fuel of host calls. The meter counts the module's own instructions;
// the host functions it imports (WASI's and the capability modules')
// charge the same fuel for the work they do on its behalf, so that a
// module looping on host calls runs out, and is stopped, as one looping
// in code is. A call is charged before the host does anything:
// HostCallFuel, and HostByteFuel per byte of the lengths it is passed
// (buffers and paths it reads or fills, iovecs and what they address,
// poll_oneoff's subscriptions and events, args_get's and environ_get's
// strings), whatever then becomes of them. A function that hands the
// module something the host produced (secret_get, storage_get,
// http_request) is charged its length as well, after producing it. The
// charges depend only on the arguments and on what the host produced, so
// fuel stays the same on every engine.
//
// HostCallFuel is about what the call itself costs on the compiler: a
// loop calling sched_yield used fuel at 740 units a microsecond, one
// looping in code at 710 (a quiet 2-vCPU machine). A byte costs a unit,
// as memory.fill's do; random_get produces about one a nanosecond.
const (
	HostCallFuel = 100
	HostByteFuel = 1
)

// Why a host function ended a call (it panics with one; wazero makes the
// panic the call's error). The outcome is the yield's or the meter's:
// classify reads callCaps.stopped and the fuel, not these.
var (
	errHostStopped   = errors.New("the call's time ran out or its context ended during a host call")
	errHostOutOfFuel = errors.New("out of fuel in a host call")
)

// enterHost is the prologue of a capability host function: see
// callCaps.enter. It returns the call's capabilities, nil outside a
// Tool's call (tests), where nothing is checked or charged.
func enterHost(ctx context.Context, mod api.Module, bytes uint64) *callCaps {
	cc := callCapsFrom(ctx)
	if cc != nil {
		cc.enter(ctx, mod, bytes)
	}
	return cc
}

// enter is the prologue of every host function: the call ends, as at a
// yield, when its context ended or its time ran out; else it is charged
// HostCallFuel and bytes times HostByteFuel, and ends as code that ran
// out of fuel does when they do not fit.
func (cc *callCaps) enter(ctx context.Context, mod api.Module, bytes uint64) {
	cc.checkTime(ctx)
	cc.charge(mod, hostFuel(bytes))
}

// produced charges the bytes a host function produced for the module
// (a positive result of secret_get, storage_get, http_request), after
// its use is recorded. A function that waited does not check the time
// again here: its wait ended with the call's time or context (callCaps.
// bound) and it returns an error the module sees (-5, -9); the module's
// next host call or yield ends the call.
func (cc *callCaps) produced(mod api.Module, n int32) {
	if n > 0 {
		cc.charge(mod, int64(n)*HostByteFuel)
	}
}

// done reports whether the call must stop: its context ended or its time
// ran out.
func (cc *callCaps) done(ctx context.Context) bool { return ctx.Err() != nil || cc.expired() }

// checkTime ends the call when it is done, as runner.yield does.
func (cc *callCaps) checkTime(ctx context.Context) {
	if cc.done(ctx) {
		cc.stopped = true
		panic(errHostStopped)
	}
}

// charge takes fuel from the calling instance and ends the call when it
// ran out. Unmetered calls (cc.meter nil or not metered) pay nothing.
func (cc *callCaps) charge(mod api.Module, fuel int64) {
	if cc.meter == nil {
		return
	}
	out, err := cc.meter.charge(mod, fuel)
	if err != nil {
		panic(fmt.Errorf("the fuel meter: %w", err))
	}
	if out {
		panic(errHostOutOfFuel)
	}
}

// hostFuel is a call's charge for bytes, at most math.MaxInt64.
func hostFuel(bytes uint64) int64 {
	if bytes > (math.MaxInt64-HostCallFuel)/HostByteFuel {
		return math.MaxInt64
	}
	return HostCallFuel + int64(bytes)*HostByteFuel
}
