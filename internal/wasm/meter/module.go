package meter

import (
	"bytes"
	"fmt"
	"strings"
)

// Section ids of the binary format.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13 // exception handling; kept as is
)

// header is the magic number and version 1 every core module starts with.
var header = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// section is one section of a module: its id and contents, without the
// id byte and size. off is where the contents start in the input.
type section struct {
	id    byte
	data  []byte
	off   int
	funcs []int // offsets in data of the function indices outside code
}

// module is what instrumentation needs to know about a parsed module. The
// sections keep their bytes; on output, sections get entries appended, the
// code section is rebuilt, and with Options.Yield the function indices
// recorded in each section are renumbered.
type module struct {
	sections        []section
	typeParams      []uint32 // parameter count of each function type
	funcTypes       []uint32 // type index of each function the module defines
	bodies          []section
	importedFuncs   uint32
	importedGlobals uint32
	globals         uint32 // globals the module defines
	start           uint32 // the start function's index, when hasStart
	hasStart        bool
}

// rank orders the known non-custom sections as the binary format requires.
// Custom sections have rank 0 and may appear anywhere.
func rank(id byte) int {
	switch id {
	case secTag:
		return 2*secMemory + 1
	case secDataCount:
		return 2*secElement + 1
	case secCustom:
		return 0
	}
	return 2 * int(id)
}

func parseModule(b []byte) (*module, error) {
	if len(b) < len(header) || !bytes.Equal(b[:4], header[:4]) {
		return nil, fmt.Errorf("%w: not a WebAssembly module (bad magic number)", ErrMalformed)
	}
	if !bytes.Equal(b[4:8], header[4:]) {
		return nil, fmt.Errorf("%w: version %x: only core module version 1 is supported", ErrUnsupported, b[4:8])
	}
	m := &module{}
	r := newReader(b, 0)
	r.off = len(header)
	last := 0
	for r.len() > 0 {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		if id > secTag {
			return nil, fmt.Errorf("%w: unknown section id %d at 0x%x", ErrUnsupported, id, r.off-1)
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		off := r.off
		data, err := r.bytes(uint64(size))
		if err != nil {
			return nil, err
		}
		if id != secCustom {
			if rank(id) <= last {
				return nil, fmt.Errorf("%w: section %d at 0x%x is out of order or repeated", ErrMalformed, id, off)
			}
			last = rank(id)
		}
		s := section{id: id, data: data, off: off}
		if err := m.parseSection(&s); err != nil {
			return nil, err
		}
		m.sections = append(m.sections, s)
	}
	if len(m.bodies) != len(m.funcTypes) {
		return nil, fmt.Errorf("%w: %d functions declared but %d bodies", ErrMalformed, len(m.funcTypes), len(m.bodies))
	}
	return m, nil
}

// parseSection checks the structure of one section and collects what the
// instrumenter needs from it. Every section must be consumed exactly.
func (m *module) parseSection(s *section) error {
	r := newReader(s.data, s.off)
	var err error
	switch s.id {
	case secCustom:
		_, err = r.name()
		r.off = len(r.b) // the rest is opaque and kept byte for byte
	case secType:
		err = m.parseTypes(r)
	case secImport:
		err = m.parseImports(r)
	case secFunction:
		err = m.parseFunctions(r)
	case secTable:
		err = vec(r, 3, func() error { return parseTable(r) })
	case secMemory:
		err = vec(r, 2, func() error { return parseLimits(r) })
	case secGlobal:
		err = m.parseGlobals(r)
	case secExport:
		err = vec(r, 3, func() error { return parseExport(r) })
	case secStart:
		m.start, err = r.funcIndex()
		m.hasStart = err == nil
	case secDataCount:
		_, err = r.u32()
	case secElement:
		err = vec(r, 3, func() error { return parseElement(r) })
	case secCode:
		err = m.parseCode(r)
	case secData:
		err = vec(r, 2, func() error { return parseData(r) })
	case secTag:
		r.off = len(r.b)
	}
	if err != nil {
		return err
	}
	s.funcs = r.funcs
	return r.expectEnd(fmt.Sprintf("section %d", s.id))
}

// vec reads a vector of entries of at least minSize bytes each.
func vec(r *reader, minSize int, entry func() error) error {
	n, err := r.count(minSize)
	if err != nil {
		return err
	}
	for range n {
		if err := entry(); err != nil {
			return err
		}
	}
	return nil
}

func checkName(kind, name string) error {
	if strings.HasPrefix(name, ReservedPrefix) {
		return fmt.Errorf("%w: %s %q", ErrReservedName, kind, name)
	}
	return nil
}
