package meter

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// SetFuel sets the fuel left in an instance of an instrumented module.
func SetFuel(mod api.Module, fuel int64) error {
	g, err := fuelGlobal(mod)
	if err != nil {
		return err
	}
	if fuel < 0 {
		return fmt.Errorf("meter: fuel %d is negative", fuel)
	}
	g.Set(api.EncodeI64(fuel))
	return nil
}

// Fuel returns the fuel left in an instance of an instrumented module. It
// is negative after the instance ran out, which ends the call with an
// unreachable trap; any other trap leaves it at zero or more. The fuel a
// call used is what SetFuel gave it less Fuel; when it ran out, that is
// the budget plus the part of the last charge that did not fit, so a
// ledger records min(used, budget). The global stays readable after the
// instance is closed, as WASI proc_exit does.
func Fuel(mod api.Module) (int64, error) {
	g, err := fuelGlobal(mod)
	if err != nil {
		return 0, err
	}
	return int64(g.Get()), nil
}

// Charge takes cost from the fuel left in an instance of an instrumented
// module, for work done on its behalf outside its code: a host function
// it calls charges for that work before doing it. It returns the fuel
// left, negative when the cost did not fit. The caller must then end the
// call (a host function traps, e.g. by panicking), which ends as code
// that ran out of fuel does: with Fuel negative. Fuel already negative
// is left as it is.
func Charge(mod api.Module, cost int64) (int64, error) {
	g, err := fuelGlobal(mod)
	if err != nil {
		return 0, err
	}
	if cost < 0 {
		return 0, fmt.Errorf("meter: cost %d is negative", cost)
	}
	left := int64(g.Get())
	if left < 0 || cost == 0 {
		return left, nil
	}
	left -= cost // no overflow: left >= 0
	g.Set(api.EncodeI64(left))
	return left, nil
}

// SetFloor sets the floor of an instance of a module instrumented with
// Options.Yield: the next fuel check that finds the fuel below it calls
// the host's yield. floor = max(0, fuel-quantum) has yield called once
// about every quantum units of fuel; 0 has it never called, as a check
// that finds the fuel below 0 traps instead. The floor is never negative,
// so that running out of fuel traps whatever yield does.
func SetFloor(mod api.Module, floor int64) error {
	g, ok := mod.ExportedGlobal(FloorExport).(api.MutableGlobal)
	if !ok || g.Type() != api.ValueTypeI64 {
		return fmt.Errorf("%w: %q exports no mutable i64 %s", ErrNoYield, mod.Name(), FloorExport)
	}
	if floor < 0 {
		return fmt.Errorf("meter: floor %d is negative", floor)
	}
	g.Set(api.EncodeI64(floor))
	return nil
}

func fuelGlobal(mod api.Module) (api.MutableGlobal, error) {
	g, ok := mod.ExportedGlobal(FuelExport).(api.MutableGlobal)
	if !ok || g.Type() != api.ValueTypeI64 {
		return nil, fmt.Errorf("%w: %q exports no mutable i64 %s", ErrNotMetered, mod.Name(), FuelExport)
	}
	return g, nil
}
