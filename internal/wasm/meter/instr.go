package meter

import "fmt"

// opClass is what the instrumenter needs to know about an instruction: how
// it moves control, and whether it takes a per-unit charge.
type opClass uint8

const (
	classPlain   opClass = iota
	classBlock           // block
	classLoop            // loop
	classIf              // if
	classElse            // else
	classEnd             // end
	classBr              // br
	classBrIf            // br_if
	classBrTable         // br_table
	classExit            // return, unreachable, return_call, return_call_indirect
	classBulk            // memory.init/copy/fill, table.init/copy/fill/grow: a count on top of the stack
	classGrow            // memory.grow: a page count on top of the stack
	classFunc            // not an instruction: a function index to renumber (insertion only)
)

// instr is one decoded instruction. labels aliases the decoder's buffer and
// is valid until the next call to next.
type instr struct {
	class  opClass
	labels []uint32 // branch depths of br, br_if and br_table
}

// decoder reads instructions one at a time, checking their immediates.
type decoder struct {
	r      *reader
	labels []uint32
}

func (d *decoder) unsupported(op string) error {
	return fmt.Errorf("%w: %s at 0x%x", ErrUnsupported, op, d.r.base+d.r.off)
}

// next decodes the instruction at the reader's offset.
func (d *decoder) next() (instr, error) {
	r := d.r
	op, err := r.byte()
	if err != nil {
		return instr{}, err
	}
	switch {
	case op == 0x00: // unreachable
		return instr{class: classExit}, nil
	case op == 0x01, op == 0x1a, op == 0x1b, op == 0xd1, op >= 0x45 && op <= 0xc4:
		// nop, drop, select, ref.is_null, numeric (with sign extension 0xc0-0xc4)
		return instr{}, nil
	case op >= 0x02 && op <= 0x04: // block, loop, if
		return instr{class: classBlock + opClass(op-0x02)}, d.blockType()
	case op == 0x05:
		return instr{class: classElse}, nil
	case op == 0x0b:
		return instr{class: classEnd}, nil
	case op == 0x0c || op == 0x0d: // br, br_if
		l, err := r.u32()
		d.labels = append(d.labels[:0], l)
		return instr{class: classBr + opClass(op-0x0c), labels: d.labels}, err
	case op == 0x0e:
		return d.brTable()
	case op == 0x0f: // return
		return instr{class: classExit}, nil
	case op == 0x10: // call
		_, err := r.funcIndex()
		return instr{}, err
	case op == 0x11: // call_indirect
		return instr{}, d.u32s(2)
	case op == 0x12: // return_call (tail-call proposal)
		_, err := r.funcIndex()
		return instr{class: classExit}, err
	case op == 0x13: // return_call_indirect (tail-call proposal)
		return instr{class: classExit}, d.u32s(2)
	case op == 0x1c: // select t*
		return instr{}, d.valTypes()
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get, table.set
		return instr{}, d.u32s(1)
	case op >= 0x28 && op <= 0x3e: // loads and stores
		return instr{}, d.memarg()
	case op == 0x3f: // memory.size
		return instr{}, d.u32s(1)
	case op == 0x40: // memory.grow
		return instr{class: classGrow}, d.u32s(1)
	case op == 0x41:
		_, err := r.sleb(32)
		return instr{}, err
	case op == 0x42:
		_, err := r.sleb(64)
		return instr{}, err
	case op == 0x43:
		_, err := r.bytes(4)
		return instr{}, err
	case op == 0x44:
		_, err := r.bytes(8)
		return instr{}, err
	case op == 0xd0: // ref.null
		t, err := r.byte()
		if err == nil && t != 0x70 && t != 0x6f {
			return instr{}, d.unsupported(fmt.Sprintf("ref.null of heap type 0x%x", t))
		}
		return instr{}, err
	case op == 0xd2: // ref.func
		_, err := r.funcIndex()
		return instr{}, err
	case op == 0xfc:
		return d.misc()
	case op == 0xfd:
		return d.simd()
	}
	switch op {
	case 0x06, 0x07, 0x08, 0x09, 0x0a, 0x18, 0x19, 0x1f:
		return instr{}, d.unsupported(fmt.Sprintf("exception handling opcode 0x%x", op))
	case 0x14, 0x15, 0xd3, 0xd4, 0xd5, 0xd6, 0xfb:
		return instr{}, d.unsupported(fmt.Sprintf("typed reference or GC opcode 0x%x", op))
	case 0xfe:
		return instr{}, d.unsupported("threads (atomic) opcode 0xfe")
	}
	r.off--
	return instr{}, r.errorf("unknown opcode 0x%x", op)
}

func (d *decoder) u32s(n int) error {
	for range n {
		if _, err := d.r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// blockType reads a block type: empty, one value type, or a type index.
func (d *decoder) blockType() error {
	at := d.r.off
	t, err := d.r.sleb(33)
	if err != nil {
		return err
	}
	if t >= 0 || t == -0x40 {
		return nil // a type index (multi-value) or the empty type
	}
	if b := d.r.b[at]; b == 0x63 || b == 0x64 {
		return d.unsupported("typed reference block type")
	} else if !isValType(b) {
		return d.r.errorf("invalid block type 0x%x", b)
	}
	return nil
}

func (d *decoder) brTable() (instr, error) {
	n, err := d.r.count(1)
	if err != nil {
		return instr{}, err
	}
	d.labels = d.labels[:0]
	for i := uint64(0); i <= uint64(n); i++ { // n targets and the default
		l, err := d.r.u32()
		if err != nil {
			return instr{}, err
		}
		d.labels = append(d.labels, l)
	}
	return instr{class: classBrTable, labels: d.labels}, nil
}

func (d *decoder) valTypes() error {
	n, err := d.r.count(1)
	if err != nil {
		return err
	}
	for range n {
		if err := d.valType(); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) valType() error {
	t, err := d.r.byte()
	switch {
	case err != nil:
		return err
	case t == 0x63 || t == 0x64:
		return d.unsupported("typed reference value type")
	case !isValType(t):
		return d.r.errorf("invalid value type 0x%x", t)
	}
	return nil
}

// isValType reports whether t is i32, i64, f32, f64, v128, funcref or externref.
func isValType(t byte) bool {
	return t >= 0x7b && t <= 0x7f || t == 0x70 || t == 0x6f
}

// memarg reads a load or store's alignment and offset.
func (d *decoder) memarg() error {
	align, err := d.r.u32()
	if err != nil {
		return err
	}
	if align >= 0x40 {
		return d.unsupported("memory index in memarg (multi-memory)")
	}
	_, err = d.r.u32()
	return err
}
