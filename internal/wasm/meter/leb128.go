package meter

import "errors"

// LEB128 as the WebAssembly binary format uses it: little-endian base-128
// groups of seven bits, the high bit of each byte set when another byte
// follows. An N-bit value takes at most ceil(N/7) bytes, and the unused bits
// of the last byte must be zero (unsigned) or copies of the sign bit
// (signed); longer or non-canonical-overflowing encodings are malformed, as
// in wazero's decoder.

var (
	errLEBTruncated = errors.New("truncated LEB128")
	errLEBOverflow  = errors.New("LEB128 overflows its type")
)

// appendUleb appends v as unsigned LEB128.
func appendUleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendSleb appends v as signed LEB128.
func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// decodeUleb decodes an unsigned LEB128 value of at most bits bits from the
// start of b and returns it with the number of bytes it took.
func decodeUleb(b []byte, bits uint) (uint64, int, error) {
	var v uint64
	maxBytes := int((bits + 6) / 7)
	for i := 0; i < maxBytes; i++ {
		if i >= len(b) {
			return 0, 0, errLEBTruncated
		}
		c := b[i]
		shift := uint(7 * i)
		if i == maxBytes-1 {
			// Only bits-shift bits of the last group are in range.
			if rem := bits - shift; rem < 7 && c&0x7f>>rem != 0 {
				return 0, 0, errLEBOverflow
			}
			if c&0x80 != 0 {
				return 0, 0, errLEBOverflow
			}
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errLEBOverflow // unreachable: the last byte returns or fails above
}

// decodeSleb decodes a signed LEB128 value of at most bits bits from the
// start of b and returns it with the number of bytes it took.
func decodeSleb(b []byte, bits uint) (int64, int, error) {
	var v int64
	maxBytes := int((bits + 6) / 7)
	for i := 0; i < maxBytes; i++ {
		if i >= len(b) {
			return 0, 0, errLEBTruncated
		}
		c := b[i]
		shift := uint(7 * i)
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, 0, errLEBOverflow
			}
			// The group, sign-extended from seven bits, must fit in the
			// rem bits left: its unused high bits copy the sign bit.
			if rem := bits - shift; rem < 7 {
				g := int64(int8(c<<1) >> 1)
				if g < -(1<<(rem-1)) || g >= 1<<(rem-1) {
					return 0, 0, errLEBOverflow
				}
			}
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, errLEBOverflow // unreachable: the last byte returns or fails above
}
