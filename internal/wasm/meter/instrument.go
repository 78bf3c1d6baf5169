package meter

import (
	"errors"
	"fmt"
	"math"
)

// FuelExport is the name under which an instrumented module exports its
// fuel global: a mutable i64 holding the fuel left.
const FuelExport = ReservedPrefix + "fuel"

// FloorExport is the name under which a module instrumented with
// Options.Yield exports its floor global: a mutable i64, initially 0,
// below which the fuel makes the module call the host's yield (see
// SetFloor).
const FloorExport = ReservedPrefix + "floor"

// YieldModule and YieldName name the function a module instrumented with
// Options.Yield imports, of type () -> (i32). The host provides it (in
// wazero, a host module named YieldModule) before instantiating the module.
const (
	YieldModule = ReservedPrefix + "meter"
	YieldName   = "yield"
)

// StartExport is the name under which a module instrumented with
// Options.DeferStart exports its start function, which instantiation then
// does not run (see Options.DeferStart).
const StartExport = ReservedPrefix + "start"

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
	// ErrNoYield is returned by SetFloor for an instance without the floor
	// global (Options.Yield).
	ErrNoYield = errors.New("meter: module does not yield")
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
	// Yield makes the module call the host's yield, imported as
	// YieldModule.YieldName, whenever the fuel check at a function's entry
	// or a loop's head finds the fuel below the floor, a global exported as FloorExport that the host moves
	// with SetFloor. yield returns 0 for the call to go on, or non-zero
	// for it to trap with unreachable: that is how the host ends a call
	// that has run too long, from the call's own goroutine. The fuel used
	// is the same with and without Yield, and running out of fuel traps
	// whatever yield does. See the package documentation.
	Yield bool
	// DeferStart removes the module's start section and exports its
	// start function as StartExport instead, for the host to call after
	// instantiation, once it has set the fuel and the floor: an engine
	// runs a start function inside instantiation, on InitialFuel and with
	// the floor at 0, so that it never yields. The host must call it
	// before anything else, or the module sees state its start function
	// would have set up. A module without a start section gets no such
	// export.
	DeferStart bool
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
	w, err := m.rewriter(opts)
	if err != nil {
		return nil, err
	}
	code, err := m.code(w)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(wasm)+len(wasm)/2+64)
	out = append(out, header...)
	pending := m.additions(w)
	for _, s := range m.sections {
		// Add the sections the module lacks before the first section that
		// must follow them.
		for len(pending) > 0 && s.id != secCustom && rank(s.id) > rank(pending[0].id) {
			out = appendSection(out, pending[0].id, appendUleb(nil, uint64(pending[0].n)), pending[0].data)
			pending = pending[1:]
		}
		data, keep := m.contents(s, w, code)
		switch {
		case !keep:
		case len(pending) > 0 && s.id == pending[0].id:
			s.data = data
			out, err = appendGrown(out, s, pending[0].n, pending[0].data)
			pending = pending[1:]
		default:
			out = appendSection(out, s.id, data)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, p := range pending {
		out = appendSection(out, p.id, appendUleb(nil, uint64(p.n)), p.data)
	}
	return out, nil
}

// rewriter returns the rewriter of m's function bodies, with the indices
// of what instrumentation adds.
func (m *module) rewriter(opts Options) (*rewriter, error) {
	fuel := uint64(m.importedGlobals) + uint64(m.globals)
	funcs := uint64(m.importedFuncs) + uint64(len(m.bodies))
	last := fuel // index of the last global added
	if opts.Yield {
		last++  // the floor
		funcs++ // the yield import comes before the module's own functions
	}
	if last >= math.MaxUint32 {
		return nil, fmt.Errorf("%w: too many globals", ErrMalformed)
	}
	if funcs >= math.MaxUint32 {
		return nil, fmt.Errorf("%w: too many functions", ErrMalformed)
	}
	// With Yield, $slow is the last function, after the module's own.
	return &rewriter{opts: opts, fuel: uint32(fuel), imported: m.importedFuncs, slow: uint32(funcs)}, nil
}

// contents returns what section s holds once instrumented, and false if
// it is left out.
func (m *module) contents(s section, w *rewriter, code []byte) ([]byte, bool) {
	switch {
	case s.id == secCode:
		return code, true
	case s.id == secStart && w.opts.DeferStart:
		return nil, false // exported as StartExport instead
	case !w.opts.Yield:
		return s.data, true
	case s.id == secCustom:
		if r := newReader(s.data, s.off); !isNameSection(r) {
			return s.data, true
		}
		// A name section that does not parse would name the wrong
		// functions: it is dropped.
		return renumberNames(s.data, m.importedFuncs)
	}
	return renumbered(s.data, s.funcs, m.importedFuncs), true
}

// additions returns what instrumentation adds to sections, in section
// order.
func (m *module) additions(w *rewriter) []addition {
	globals := appendGlobal(nil, w.opts.InitialFuel)
	exports := appendExport(nil, FuelExport, 0x03, uint64(w.fuel))
	nGlobals := 1
	if w.opts.Yield {
		globals = appendGlobal(globals, 0)
		exports = appendExport(exports, FloorExport, 0x03, uint64(w.fuel)+1)
		nGlobals++
	}
	nExports := nGlobals
	if w.opts.DeferStart && m.hasStart {
		exports = appendExport(exports, StartExport, 0x00, w.funcIndex(m.start))
		nExports++
	}
	adds := []addition{{secGlobal, nGlobals, globals}, {secExport, nExports, exports}}
	if !w.opts.Yield {
		return adds
	}
	// The yield import's type and then $slow's, after the module's types.
	yieldType := uint64(len(m.typeParams))
	types := []byte{0x60, 0x00, 0x01, 0x7f, 0x60, 0x00, 0x00}
	imp := appendUleb(append(appendName(appendName(nil, YieldModule), YieldName), 0x00), yieldType)
	adds = append([]addition{
		{secType, 2, types},
		{secImport, 1, imp},
		{secFunction, 1, appendUleb(nil, yieldType+1)},
	}, adds...)
	return append(adds, addition{secCode, 1, slowBody(w.fuel, m.importedFuncs)})
}

// addition is what Instrument adds to a section: n entries, encoded.
type addition struct {
	id   byte
	n    int
	data []byte
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

// appendGrown appends section s, a vector, with the k encoded entries
// added at its end.
func appendGrown(out []byte, s section, k int, entries []byte) ([]byte, error) {
	r := newReader(s.data, s.off)
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if uint64(n)+uint64(k) >= math.MaxUint32 {
		return nil, r.errorf("vector too long to grow")
	}
	count := appendUleb(nil, uint64(n)+uint64(k))
	return appendSection(out, s.id, count, s.data[r.off:], entries), nil
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

// appendGlobal appends a global (mut i64) (i64.const v).
func appendGlobal(out []byte, v int64) []byte {
	out = appendSleb(append(out, 0x7e, 0x01, 0x42), v)
	return append(out, 0x0b)
}

// appendExport appends the export of index i of kind (0x00 a function,
// 0x03 a global) as name.
func appendExport(out []byte, name string, kind byte, i uint64) []byte {
	return appendUleb(append(appendName(out, name), kind), i)
}

// appendName appends a name: its length and bytes.
func appendName(out []byte, name string) []byte {
	return append(appendUleb(out, uint64(len(name))), name...)
}
