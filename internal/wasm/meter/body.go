package meter

import "fmt"

// maxLocals bounds a function's parameters and locals, as the JS API's
// implementation limits do: the engine allocates per local, so a forged
// count of billions is a denial of service before any code runs.
const maxLocals = 50000

// insertion is instrumentation to insert before the instruction at offset
// at of a function body: a segment's charge (class classPlain, n
// instructions) or a per-unit charge before a bulk operation or
// memory.grow; or, class classFunc, the function index at offset at to
// replace with its renumbered value.
type insertion struct {
	at    int
	n     uint64
	class opClass
	entry bool // a segment at a function's entry or a loop's head: it may yield
}

// frame is an open block, loop or if while a body is analysed.
type frame struct {
	class    opClass
	targeted bool // some branch names this block's label
}

// rewriter instruments function bodies. It is reused across the bodies of
// one module so that its buffers are too.
type rewriter struct {
	opts     Options
	fuel     uint32 // index of the fuel global; the floor global follows it
	imported uint32 // function imports of the module, before the yield import
	slow     uint32 // index of $slow, when opts.Yield
	ins      []insertion
	stack    []frame
	labels   []uint32
	buf      []byte
}

// body appends the instrumented version of one function body, with its
// size prefix, to dst.
func (w *rewriter) body(dst []byte, fn section, params uint32) ([]byte, error) {
	r := newReader(fn.data, fn.off)
	decls, err := r.count(2)
	if err != nil {
		return nil, err
	}
	declStart := r.off
	locals, err := readLocals(r, decls)
	if err != nil {
		return nil, err
	}
	locals += uint64(params)
	if locals > maxLocals {
		return nil, fmt.Errorf("%w: %d parameters and locals, over the limit of %d",
			ErrUnsupported, locals, maxLocals)
	}
	declEnd := r.off
	usesTemp, err := w.analyse(r)
	if err != nil {
		return nil, err
	}

	out := w.buf[:0]
	if usesTemp {
		// One more i32 local, after all existing ones, holds the count a
		// bulk operation or memory.grow is charged for.
		out = appendUleb(out, uint64(decls)+1)
		out = append(out, fn.data[declStart:declEnd]...)
		out = append(out, 0x01, 0x7f)
	} else {
		out = append(out, fn.data[:declEnd]...)
	}
	out = w.emit(out, fn.data, declEnd, uint32(locals))
	w.buf = out
	dst = appendUleb(dst, uint64(len(out)))
	return append(dst, out...), nil
}

// readLocals reads decls local declarations and returns how many locals
// they declare.
func readLocals(r *reader, decls uint32) (uint64, error) {
	d := &decoder{r: r}
	var locals uint64
	for range decls {
		n, err := r.u32()
		if err != nil {
			return 0, err
		}
		locals += uint64(n)
		if err := d.valType(); err != nil {
			return 0, err
		}
	}
	return locals, nil
}

// analyse splits the body's instructions into metered segments (see the
// package documentation) and records the insertions. It reports whether
// any instruction needs the temporary local.
func (w *rewriter) analyse(r *reader) (bool, error) {
	d := &decoder{r: r, labels: w.labels}
	defer func() { w.labels = d.labels }()
	w.ins = append(w.ins[:0], insertion{at: r.off, entry: true})
	w.stack = append(w.stack[:0], frame{class: classBlock})
	seg, live, usesTemp := 0, true, false
	var n uint64
	// split ends the current segment after the instruction just read; the
	// next one starts a segment, dead if control cannot fall into it.
	split := func(dead bool) {
		if live {
			w.ins[seg].n = n
		}
		n, live, seg = 0, !dead, len(w.ins)
		w.ins = append(w.ins, insertion{at: r.off})
	}
	for {
		at := r.off
		in, err := d.next()
		if err != nil {
			return false, err
		}
		if op := r.b[at]; op == 0x23 || op == 0x24 {
			// Past the module's own globals are the fuel and the floor:
			// an invalid module must not become a valid one that sets them.
			if g, _, _ := decodeUleb(r.b[at+1:], 32); g >= uint64(w.fuel) {
				return false, fmt.Errorf("%w: global index %d out of range at 0x%x", ErrMalformed, g, r.base+at)
			}
		}
		if w.opts.Yield {
			for _, at := range r.funcs {
				w.ins = append(w.ins, insertion{at: at, class: classFunc})
			}
		}
		r.funcs = r.funcs[:0]
		n++
		switch in.class {
		case classBlock:
			w.stack = append(w.stack, frame{class: classBlock})
		case classLoop, classIf:
			w.stack = append(w.stack, frame{class: in.class})
			split(false)
			w.ins[len(w.ins)-1].entry = in.class == classLoop
		case classElse:
			top := &w.stack[len(w.stack)-1]
			if top.class != classIf {
				return false, r.errorf("else outside if")
			}
			top.class = classElse
			split(false)
		case classEnd:
			f := w.stack[len(w.stack)-1]
			w.stack = w.stack[:len(w.stack)-1]
			if len(w.stack) == 0 {
				if live {
					w.ins[seg].n = n
				}
				return usesTemp, r.expectEnd("function body")
			}
			// The instruction after an if's end is reached from the
			// other arm too, and after a block's end by its branches.
			if f.class == classIf || f.class == classElse || f.class == classBlock && f.targeted {
				split(false)
			}
		case classBr, classBrTable, classBrIf:
			for _, l := range in.labels {
				if uint64(l) >= uint64(len(w.stack)) {
					return false, r.errorf("branch depth %d out of range", l)
				}
				w.stack[len(w.stack)-1-int(l)].targeted = true
			}
			split(in.class != classBrIf)
		case classExit:
			split(true)
		case classBulk, classGrow:
			w.ins = append(w.ins, insertion{at: at, class: in.class})
			usesTemp = true
		}
	}
}

// emit appends the body's instructions from offset start with the
// insertions made.
func (w *rewriter) emit(out, body []byte, start int, temp uint32) []byte {
	for _, in := range w.ins {
		out = append(out, body[start:in.at]...)
		start = in.at
		switch in.class {
		case classPlain:
			if in.n > 0 {
				out = w.appendCharge(out, in.n*uint64(w.opts.InstructionCost), in.entry)
			}
		case classBulk:
			out = w.appendUnitCharge(out, temp, uint64(w.opts.ByteCost))
		case classGrow:
			out = w.appendUnitCharge(out, temp, uint64(w.opts.PageCost))
		case classFunc:
			idx, k, _ := decodeUleb(body[in.at:], 32) // decoded once already
			out = appendUleb(out, shifted(uint32(idx), w.imported))
			start = in.at + k
		}
	}
	return append(out, body[start:]...)
}

// appendCharge appends code that takes cost from the fuel global and traps
// if that leaves it negative:
//
//	global.get F; i64.const cost; i64.sub; global.set F; <check>
//
// With Options.Yield, the check of a segment at a function's entry or a
// loop's head (entry) is the one that may yield (see appendCheck).
func (w *rewriter) appendCharge(out []byte, cost uint64, entry bool) []byte {
	out = appendUleb(append(out, 0x23), uint64(w.fuel))
	out = appendSleb(append(out, 0x42), int64(cost))
	out = append(out, 0x7d)
	if entry && w.opts.Yield {
		return w.appendYieldCheck(out)
	}
	return w.appendCheck(out)
}

// appendUnitCharge appends code that takes unit fuel per unit of the i32
// count on top of the stack, leaving the count in place:
//
//	local.tee T; global.get F; local.get T; i64.extend_i32_u;
//	i64.const unit; i64.mul; i64.sub; global.set F; <check>
func (w *rewriter) appendUnitCharge(out []byte, temp uint32, unit uint64) []byte {
	if unit == 0 {
		return out
	}
	out = appendUleb(append(out, 0x22), uint64(temp))
	out = appendUleb(append(out, 0x23), uint64(w.fuel))
	out = appendUleb(append(out, 0x20), uint64(temp))
	out = append(out, 0xad)
	if unit != 1 {
		out = appendSleb(append(out, 0x42), int64(unit))
		out = append(out, 0x7e)
	}
	out = append(out, 0x7d)
	return w.appendCheck(out)
}

// appendCheck appends the store of the new fuel and the trap when it is
// negative:
//
//	global.set F; global.get F; i64.const 0; i64.lt_s; if; unreachable; end
func (w *rewriter) appendCheck(out []byte) []byte {
	out = appendUleb(append(out, 0x24), uint64(w.fuel))
	out = appendUleb(append(out, 0x23), uint64(w.fuel))
	return append(out, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b)
}

// appendYieldCheck appends, for Options.Yield, the store of the new fuel
// and the call of $slow when it is below the floor global L (see
// slowBody), which traps when it is negative and else yields:
//
//	global.set F; global.get F; global.get L; i64.lt_s; if; call $slow; end
//
// Only function entries and loop heads get it: code cannot run on without
// passing one, and elsewhere the call, rarely taken, would still cost the
// compiled code the values it keeps in registers around it (measured: fib
// metered 2.7x unmetered with it at every segment head, 2.0x this way,
// 1.6x without Yield).
func (w *rewriter) appendYieldCheck(out []byte) []byte {
	out = appendUleb(append(out, 0x24), uint64(w.fuel))
	out = appendUleb(append(out, 0x23), uint64(w.fuel))
	out = appendUleb(append(out, 0x23), uint64(w.fuel)+1)
	out = appendUleb(append(out, 0x53, 0x04, 0x40, 0x10), uint64(w.slow))
	return append(out, 0x0b)
}
