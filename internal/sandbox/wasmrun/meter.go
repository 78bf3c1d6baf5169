package wasmrun

import (
	"github.com/tetratelabs/wazero/api"

	"github.com/execledger/execledger/internal/wasm/meter"
)

// fuelMeter is the seam to the fuel meter: bytecode instrumentation that
// charges a global as the code runs and traps (unreachable, with the
// global negative) when it runs out.
type fuelMeter interface {
	// instrument returns wasm with fuel accounting added, each instance
	// starting with fuel. It must be deterministic: the cache of compiled
	// modules is keyed by the digest of the bytes before instrumentation.
	instrument(wasm []byte, fuel int64) ([]byte, error)
	// left is an instance's remaining fuel; negative once it ran out.
	left(mod api.Module) (int64, error)
	// charge takes fuel from an instance for a host call's work and
	// reports whether it ran out (the fuel is then negative, as code
	// that ran out leaves it).
	charge(mod api.Module, fuel int64) (out bool, err error)
	// metered is false for the stand-in that meters nothing.
	metered() bool
	// yields reports whether instrumented modules call runner.yield as
	// they run; setFloor sets the fuel below which one next does.
	yields() bool
	setFloor(mod api.Module, floor int64) error
}

// newMeter returns the meter calls are charged by: internal/wasm/meter
// with its default costs.
//
// A metered module yields to the host as it runs (runner.yield), and its
// start function, if any, is deferred to the call, where it draws on the
// call's fuel and can be stopped like the rest: wazero would run it
// inside instantiation, before the host holds the instance.
//
// Each instance starts with the tool's whole fuel limit
// (meter.Options.InitialFuel), so a call needs no meter.SetFuel: nothing
// of the module runs before the call, which spends that one budget on
// the start function, _initialize and the entrypoint together.
func newMeter() fuelMeter { return fuelCounter{} }

// fuelCounter is internal/wasm/meter.
type fuelCounter struct{}

func (fuelCounter) instrument(wasm []byte, fuel int64) ([]byte, error) {
	return meter.Instrument(wasm, meter.Options{InitialFuel: fuel, Yield: true, DeferStart: true})
}

func (fuelCounter) left(mod api.Module) (int64, error) { return meter.Fuel(mod) }
func (fuelCounter) metered() bool                      { return true }
func (fuelCounter) yields() bool                       { return true }

func (fuelCounter) setFloor(mod api.Module, floor int64) error { return meter.SetFloor(mod, floor) }

func (fuelCounter) charge(mod api.Module, fuel int64) (bool, error) {
	left, err := meter.Charge(mod, fuel)
	return left < 0, err
}

// unmetered meters nothing; only the timeout bounds a call.
type unmetered struct{}

func (unmetered) instrument(wasm []byte, _ int64) ([]byte, error) { return wasm, nil }
func (unmetered) left(api.Module) (int64, error)                  { return 0, nil }
func (unmetered) charge(api.Module, int64) (bool, error)          { return false, nil }
func (unmetered) metered() bool                                   { return false }
func (unmetered) yields() bool                                    { return false }
func (unmetered) setFloor(api.Module, int64) error                { return nil }
