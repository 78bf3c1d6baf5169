package meter

import "fmt"

// misc decodes the 0xFC-prefixed instructions: non-trapping float-to-int
// conversions (0-7) and bulk memory and table operations (8-17).
func (d *decoder) misc() (instr, error) {
	sub, err := d.r.u32()
	if err != nil {
		return instr{}, err
	}
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // i32/i64.trunc_sat_f32/f64_s/u
		return instr{}, nil
	case 9, 13, 16: // data.drop, elem.drop, table.size
		return instr{}, d.u32s(1)
	case 11, 15, 17: // memory.fill, table.grow, table.fill
		return instr{class: classBulk}, d.u32s(1)
	case 8, 10, 12, 14: // memory.init, memory.copy, table.init, table.copy
		return instr{class: classBulk}, d.u32s(2)
	}
	return instr{}, d.unsupported(fmt.Sprintf("opcode 0xfc %d", sub))
}

// simd decodes the 0xFD-prefixed fixed-width SIMD instructions of
// WebAssembly 2.0. None of them moves control or touches a range of memory
// larger than 16 bytes, so all are plain straight-line instructions; only
// their immediates differ. Relaxed SIMD (sub-opcodes above 0xff) is refused.
func (d *decoder) simd() (instr, error) {
	sub, err := d.r.u32()
	if err != nil {
		return instr{}, err
	}
	switch {
	case sub > 0xff:
		return instr{}, d.unsupported(fmt.Sprintf("opcode 0xfd %d (relaxed SIMD)", sub))
	case sub <= 0x0b || sub == 0x5c || sub == 0x5d: // v128 loads and stores
		return instr{}, d.memarg()
	case sub == 0x0c || sub == 0x0d: // v128.const, i8x16.shuffle
		_, err := d.r.bytes(16)
		return instr{}, err
	case sub >= 0x15 && sub <= 0x22: // extract_lane, replace_lane
		_, err := d.r.byte()
		return instr{}, err
	case sub >= 0x54 && sub <= 0x5b: // load_lane, store_lane
		if err := d.memarg(); err != nil {
			return instr{}, err
		}
		_, err := d.r.byte()
		return instr{}, err
	}
	switch sub {
	case 0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee:
		// Gaps the SIMD proposal left in the opcode space.
		return instr{}, d.r.errorf("unknown opcode 0xfd 0x%x", sub)
	}
	return instr{}, nil
}
