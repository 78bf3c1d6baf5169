package meter

// This file holds what Options.Yield adds beyond the check itself: the
// function $slow, and the renumbering of function indices that the yield
// import, placed after the module's own imports, makes necessary.

// slowBody returns the body, with its size, of $slow, the function a fuel
// check calls when the fuel is below the floor. It is not metered, so
// yielding costs no fuel. It traps when the fuel ran out whatever the
// floor, and otherwise asks the host whether to go on:
//
//	global.get F; i64.const 0; i64.lt_s; if; unreachable; end
//	call $yield; if; unreachable; end; end
func slowBody(fuel, yield uint32) []byte {
	b := appendUleb([]byte{0x00, 0x23}, uint64(fuel)) // no locals
	b = append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b, 0x10)
	b = appendUleb(b, uint64(yield))
	b = append(b, 0x04, 0x40, 0x00, 0x0b, 0x0b)
	return append(appendUleb(nil, uint64(len(b))), b...)
}

// shifted returns function index i once the yield import is inserted at
// index imported. It is 64 bits wide so that an out-of-range index stays
// out of range rather than wrapping round to a valid one.
func shifted(i, imported uint32) uint64 {
	if i >= imported {
		return uint64(i) + 1
	}
	return uint64(i)
}

// funcIndex returns the index of what was function i in the instrumented
// module.
func (w *rewriter) funcIndex(i uint32) uint64 {
	if !w.opts.Yield {
		return uint64(i)
	}
	return shifted(i, w.imported)
}

// renumbered returns data with the function indices at offsets funcs
// shifted for the yield import.
func renumbered(data []byte, funcs []int, imported uint32) []byte {
	if len(funcs) == 0 {
		return data
	}
	out := make([]byte, 0, len(data)+len(funcs))
	start := 0
	for _, at := range funcs {
		i, n, _ := decodeUleb(data[at:], 32) // read once when parsed
		out = appendUleb(append(out, data[start:at]...), shifted(uint32(i), imported))
		start = at + n
	}
	return append(out, data[start:]...)
}
