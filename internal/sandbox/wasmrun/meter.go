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
	// metered is false for the stand-in that meters nothing.
	metered() bool
}

// newMeter returns the meter calls are charged by: internal/wasm/meter
// with its default costs.
//
// Each instance starts with the tool's whole fuel limit
// (meter.Options.InitialFuel) rather than being given it with
// meter.SetFuel after instantiation: a module's start function runs while
// it is instantiated, and so draws on the same budget as the entrypoint
// instead of running unmetered or on a budget of its own.
func newMeter() fuelMeter { return fuelCounter{} }

// fuelCounter is internal/wasm/meter.
type fuelCounter struct{}

func (fuelCounter) instrument(wasm []byte, fuel int64) ([]byte, error) {
	return meter.Instrument(wasm, meter.Options{InitialFuel: fuel})
}

func (fuelCounter) left(mod api.Module) (int64, error) { return meter.Fuel(mod) }
func (fuelCounter) metered() bool                      { return true }

// unmetered meters nothing; only the timeout bounds a call.
type unmetered struct{}

func (unmetered) instrument(wasm []byte, _ int64) ([]byte, error) { return wasm, nil }
func (unmetered) left(api.Module) (int64, error)                  { return 0, nil }
func (unmetered) metered() bool                                   { return false }
