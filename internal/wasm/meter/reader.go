package meter

import (
	"fmt"
	"unicode/utf8"
)

// reader walks a byte slice of the binary format. Every read checks bounds
// and reports ErrMalformed with the offset, so no input makes it panic.
type reader struct {
	b     []byte
	off   int
	base  int   // offset of b[0] in the module, for error messages
	funcs []int // offsets in b of the function indices read by funcIndex
}

func newReader(b []byte, base int) *reader { return &reader{b: b, base: base} }

func (r *reader) len() int { return len(r.b) - r.off }

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at 0x%x: %s", ErrMalformed, r.base+r.off, fmt.Sprintf(format, args...))
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.errorf("unexpected end")
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(r.len()) {
		return nil, r.errorf("%d bytes wanted, %d left", n, r.len())
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

func (r *reader) u32() (uint32, error) {
	v, n, err := decodeUleb(r.b[r.off:], 32)
	if err != nil {
		return 0, r.errorf("%v", err)
	}
	r.off += n
	return uint32(v), nil
}

// funcIndex reads a function index and records where it is, for
// Options.Yield to renumber: the function it adds shifts the index space.
func (r *reader) funcIndex() (uint32, error) {
	r.funcs = append(r.funcs, r.off)
	return r.u32()
}

// sleb reads a signed LEB128 of the given width.
func (r *reader) sleb(bits uint) (int64, error) {
	v, n, err := decodeSleb(r.b[r.off:], bits)
	if err != nil {
		return 0, r.errorf("%v", err)
	}
	r.off += n
	return v, nil
}

// count reads a vector length and checks that the rest of the input can
// hold that many entries of at least minSize bytes each, so a forged length
// never drives an allocation.
func (r *reader) count(minSize int) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minSize) > uint64(r.len()) {
		return 0, r.errorf("vector of %d entries in %d bytes", n, r.len())
	}
	return n, nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(uint64(n))
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", r.errorf("name is not UTF-8")
	}
	return string(b), nil
}

// expectEnd fails unless the reader consumed all its input.
func (r *reader) expectEnd(what string) error {
	if r.len() != 0 {
		return r.errorf("%d bytes left over in %s", r.len(), what)
	}
	return nil
}
