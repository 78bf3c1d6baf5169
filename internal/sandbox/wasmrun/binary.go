package wasmrun

import (
	"bytes"
	"errors"
	"fmt"
)

// What this file reads of the WebAssembly binary format: section
// boundaries, the import section's non-function imports, the memory
// section's minimums, and the table section, which boundTables rewrites.
// Modules reach it only after wazero compiled them (memoryMins,
// otherImports) or at least checked the header (boundTables), so its
// errors mean a binary wazero would refuse anyway.

const (
	secImport = 2
	secTable  = 4
	secMemory = 5

	maxPages = 65536 // 4 GiB of 64 KiB pages, a 32-bit memory's most
)

var wasmMagic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

var errBinary = errors.New("malformed WebAssembly binary")

// reader reads LEB128 numbers and names from a section's bytes.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.err = errBinary
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// u32 reads an unsigned LEB128 number of at most 5 bytes.
func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errBinary
	return 0
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil || uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		r.err = errBinary
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

// limits reads a table's or memory's limits: flags, minimum, maximum.
func (r *reader) limits() (lo uint32, hi uint32, hasMax bool) {
	flags := r.byte()
	if flags > 1 { // shared or 64-bit: not enabled in the runtime
		r.err = fmt.Errorf("%w: limits flags %#x", errBinary, flags)
		return 0, 0, false
	}
	lo = r.u32()
	if flags == 1 {
		hi, hasMax = r.u32(), true
	}
	return lo, hi, hasMax
}

// section is one section of a module: its id and where its contents are.
type section struct {
	id         byte
	start, end int // contents, after the id and size
	head       int // the id's offset
}

// sections lists wasm's sections.
func sections(wasm []byte) ([]section, error) {
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 module (bad magic or version)", errBinary)
	}
	r := &reader{b: wasm, off: len(wasmMagic)}
	var out []section
	for r.off < len(wasm) {
		head := r.off
		id := r.byte()
		n := r.u32()
		start := r.off
		r.bytes(n)
		if r.err != nil {
			return nil, fmt.Errorf("%w: section %d at offset %d runs past the end of the module", errBinary, id, head)
		}
		out = append(out, section{id: id, start: start, end: r.off, head: head})
	}
	return out, nil
}

// contents returns a reader over the first section with id, or nil.
func contents(wasm []byte, secs []section, id byte) *reader {
	for _, s := range secs {
		if s.id == id {
			return &reader{b: wasm[s.start:s.end]}
		}
	}
	return nil
}

// memoryMins returns the minimum pages of the memories wasm defines.
func memoryMins(wasm []byte) ([]uint32, error) {
	secs, err := sections(wasm)
	if err != nil {
		return nil, err
	}
	r := contents(wasm, secs, secMemory)
	if r == nil {
		return nil, nil
	}
	n := r.u32()
	var mins []uint32
	for i := uint32(0); i < n && r.err == nil; i++ {
		lo, _, _ := r.limits()
		mins = append(mins, lo)
	}
	return mins, r.err
}

// otherImports returns the imports of wasm that are not functions, as
// "table|memory|global|tag module.name".
func otherImports(wasm []byte) ([]string, error) {
	secs, err := sections(wasm)
	if err != nil {
		return nil, err
	}
	r := contents(wasm, secs, secImport)
	if r == nil {
		return nil, nil
	}
	var out []string
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		mod, name := r.name(), r.name()
		switch kind := r.byte(); kind {
		case 0x00: // function: type index
			r.u32()
		case 0x01: // table: reference type, limits
			r.byte()
			r.limits()
			out = append(out, "table "+mod+"."+name)
		case 0x02:
			r.limits()
			out = append(out, "memory "+mod+"."+name)
		case 0x03: // global: value type, mutability
			r.byte()
			r.byte()
			out = append(out, "global "+mod+"."+name)
		case 0x04: // tag: attribute, type index
			r.byte()
			r.u32()
			out = append(out, "tag "+mod+"."+name)
		default:
			return nil, fmt.Errorf("%w: import kind %#x", errBinary, kind)
		}
	}
	return out, r.err
}

// boundTables returns wasm with every table it defines given a maximum of
// at most limit elements, so that table.grow, which wazero bounds only by
// a table's declared maximum, cannot allocate without bound. A table
// whose minimum is above limit is refused (errTableLimit). wasm is
// returned unchanged when every table already has such a maximum.
func boundTables(wasm []byte, limit uint32) ([]byte, error) {
	secs, err := sections(wasm)
	if err != nil {
		return nil, err
	}
	var sec *section
	for i := range secs {
		if secs[i].id == secTable {
			sec = &secs[i]
			break
		}
	}
	if sec == nil {
		return wasm, nil
	}
	r := &reader{b: wasm[sec.start:sec.end]}
	n := r.u32()
	body := appendU32(nil, n)
	changed := false
	for i := uint32(0); i < n && r.err == nil; i++ {
		ref := r.byte()
		lo, hi, hasMax := r.limits()
		if r.err != nil {
			break
		}
		if lo > limit {
			return nil, fmt.Errorf("%w: table %d starts with %d elements; the limit is %d", errTableLimit, i, lo, limit)
		}
		if !hasMax || hi > limit {
			hi, changed = limit, true
		}
		body = appendU32(append(body, ref, 0x01), lo)
		body = appendU32(body, hi)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%w: table section has %d trailing bytes", errBinary, len(r.b)-r.off)
	}
	if !changed {
		return wasm, nil
	}
	out := make([]byte, 0, len(wasm)+len(body))
	out = append(out, wasm[:sec.head]...)
	out = appendU32(append(out, secTable), uint32(len(body)))
	out = append(out, body...)
	return append(out, wasm[sec.end:]...), nil
}

var errTableLimit = errors.New("table limit")

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
