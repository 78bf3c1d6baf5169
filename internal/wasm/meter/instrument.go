package meter

import (
	"errors"
	"fmt"
	"math"
)

// FuelExport is the name under which an instrumented module exports its
// fuel global: a mutable i64 holding the fuel left.
const FuelExport = ReservedPrefix + "fuel"

// ReservedPrefix starts every name the instrumentation adds. A module that
// imports or exports any name with it is refused.
const ReservedPrefix = "__execledger_"

var (
	// ErrMalformed is returned for input that is not a well-formed module.
	ErrMalformed = errors.New("meter: malformed module")
	// ErrUnsupported is returned for a module that uses a feature the
	// instrumenter does not handle (see the package documentation).
	ErrUnsupported = errors.New("meter: unsupported module")
	// ErrReservedName is returned for a module that imports or exports a
	// name starting with ReservedPrefix, including one already instrumented.
	ErrReservedName = errors.New("meter: reserved name")
	// ErrNotMetered is returned by SetFuel and Fuel for an instance without
	// the fuel global.
	ErrNotMetered = errors.New("meter: module is not metered")
)

// maxCost bounds every cost so that the fuel arithmetic cannot overflow:
// a charge is at most 2^32 units (instructions in a segment, bytes, pages)
// times maxCost, far from 2^63, and fuel is never below zero before one.
const maxCost = 1 << 24

// Options sets the costs of instrumentation. Zero fields take the defaults.
type Options struct {
	// InstructionCost is the fuel each instruction of the original module
	// costs. Default 1.
	InstructionCost uint32
	// ByteCost is the fuel per byte that memory.fill, memory.copy and
	// memory.init write, and per element that table.fill, table.copy,
	// table.init and table.grow write. Default 1.
	ByteCost uint32
	// PageCost is the fuel per 64 KiB page that memory.grow asks for,
	// whether or not the engine grants it. Default 1024 (one per 64 bytes):
	// the engine zeroes a new page natively, far faster than instructions
	// would, and the memory limit, not fuel, bounds how much there is.
	PageCost uint32
	// InitialFuel is the fuel global's value when an instance is created:
	// the budget of the start function, which runs before the host can set
	// the fuel. Default 0, so that nothing runs before SetFuel.
	InitialFuel int64
}

func (o Options) withDefaults() Options {
	if o.InstructionCost == 0 {
		o.InstructionCost = 1
	}
	if o.ByteCost == 0 {
		o.ByteCost = 1
	}
	if o.PageCost == 0 {
		o.PageCost = 1024
	}
	return o
}

func (o Options) validate() error {
	for _, c := range []struct {
		name string
		v    uint32
	}{{"InstructionCost", o.InstructionCost}, {"ByteCost", o.ByteCost}, {"PageCost", o.PageCost}} {
		if c.v > maxCost {
			return fmt.Errorf("meter: %s %d is over the limit of %d", c.name, c.v, maxCost)
		}
	}
	if o.InitialFuel < 0 {
		return fmt.Errorf("meter: InitialFuel %d is negative", o.InitialFuel)
	}
	return nil
}

// Instrument returns a copy of the WebAssembly module wasm that counts the
// fuel it uses in an exported global (FuelExport) and traps with
// unreachable once that goes below zero. Input that is not a module is
// refused with ErrMalformed; input that uses features the instrumenter does
// not handle, with ErrUnsupported. Instrument does not validate the module:
// an invalid module gives an invalid result, which the engine refuses.
func Instrument(wasm []byte, opts Options) ([]byte, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m, err := parseModule(wasm)
	if err != nil {
		return nil, err
	}
	fuel := uint64(m.importedGlobals) + uint64(m.globals)
	if fuel >= math.MaxUint32 {
		return nil, fmt.Errorf("%w: too many globals", ErrMalformed)
	}
	w := &rewriter{opts: opts, fuel: uint32(fuel)}
	code, err := m.code(w)
	if err != nil {
		return nil, err
	}

	out := make([]byte, 0, len(wasm)+len(wasm)/2+64)
	out = append(out, header...)
	global := appendGlobal(nil, opts.InitialFuel)
	export := appendExport(nil, uint32(fuel))
	pending := []section{{id: secGlobal, data: global}, {id: secExport, data: export}}
	for _, s := range m.sections {
		// Add the global and export sections the module lacks before the
		// first section that must follow them.
		for len(pending) > 0 && s.id != secCustom && rank(s.id) > rank(pending[0].id) {
			out = appendSection(out, pending[0].id, appendUleb(nil, 1), pending[0].data)
			pending = pending[1:]
		}
		switch {
		case len(pending) > 0 && s.id == pending[0].id:
			out, err = appendGrown(out, s, pending[0].data)
			pending = pending[1:]
		case s.id == secCode:
			out = appendSection(out, secCode, code)
		default:
			out = appendSection(out, s.id, s.data)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, p := range pending {
		out = appendSection(out, p.id, appendUleb(nil, 1), p.data)
	}
	return out, nil
}

// code returns the contents of the instrumented code section.
func (m *module) code(w *rewriter) ([]byte, error) {
	var out []byte
	out = appendUleb(out, uint64(len(m.bodies)))
	for i, fn := range m.bodies {
		var err error
		out, err = w.body(out, fn, m.typeParams[m.funcTypes[i]])
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", uint64(m.importedFuncs)+uint64(i), err)
		}
	}
	return out, nil
}

// appendGrown appends section s, a vector, with entry added at its end.
func appendGrown(out []byte, s section, entry []byte) ([]byte, error) {
	r := newReader(s.data, s.off)
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if n == math.MaxUint32 {
		return nil, r.errorf("vector too long to grow")
	}
	count := appendUleb(nil, uint64(n)+1)
	return appendSection(out, s.id, count, s.data[r.off:], entry), nil
}

// appendSection appends a section made of the concatenated parts.
func appendSection(out []byte, id byte, parts ...[]byte) []byte {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	out = appendUleb(append(out, id), uint64(size))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// appendGlobal appends the fuel global: (mut i64) (i64.const fuel).
func appendGlobal(out []byte, fuel int64) []byte {
	out = appendSleb(append(out, 0x7e, 0x01, 0x42), fuel)
	return append(out, 0x0b)
}

// appendExport appends the export of global index fuel as FuelExport.
func appendExport(out []byte, fuel uint32) []byte {
	out = appendUleb(out, uint64(len(FuelExport)))
	out = append(out, FuelExport...)
	return appendUleb(append(out, 0x03), uint64(fuel))
}
