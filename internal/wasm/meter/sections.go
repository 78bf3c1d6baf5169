package meter

import "fmt"

func (m *module) parseTypes(r *reader) error {
	d := &decoder{r: r}
	return vec(r, 3, func() error {
		form, err := r.byte()
		if err != nil {
			return err
		}
		switch form {
		case 0x60:
		case 0x4e, 0x50, 0x4f, 0x5e, 0x5f:
			return d.unsupported(fmt.Sprintf("GC type form 0x%x", form))
		default:
			return r.errorf("invalid type form 0x%x", form)
		}
		params, err := r.count(1)
		if err != nil {
			return err
		}
		for range params {
			if err := d.valType(); err != nil {
				return err
			}
		}
		m.typeParams = append(m.typeParams, params)
		return d.valTypes()
	})
}

func (m *module) parseImports(r *reader) error {
	d := &decoder{r: r}
	return vec(r, 4, func() error {
		mod, err := r.name()
		if err != nil {
			return err
		}
		name, err := r.name()
		if err != nil {
			return err
		}
		if err := checkName("import module", mod); err != nil {
			return err
		}
		if err := checkName("import", name); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00: // function
			m.importedFuncs++
			_, err = r.u32()
		case 0x01:
			err = parseTable(r)
		case 0x02:
			err = parseLimits(r)
		case 0x03:
			m.importedGlobals++
			err = parseGlobalType(d)
		case 0x04:
			err = d.unsupported("tag import (exception handling)")
		default:
			err = r.errorf("invalid import kind 0x%x", kind)
		}
		return err
	})
}

func (m *module) parseFunctions(r *reader) error {
	return vec(r, 1, func() error {
		t, err := r.u32()
		if err != nil {
			return err
		}
		if int(t) >= len(m.typeParams) {
			return r.errorf("function type index %d out of range", t)
		}
		m.funcTypes = append(m.funcTypes, t)
		return nil
	})
}

func parseTable(r *reader) error {
	t, err := r.byte()
	if err != nil {
		return err
	}
	if t != 0x70 && t != 0x6f {
		return (&decoder{r: r}).unsupported(fmt.Sprintf("table of type 0x%x", t))
	}
	return parseLimits(r)
}

// parseLimits reads the limits of a table or memory. 64-bit tables and
// memories are refused: bulk operations on them take i64 counts, which the
// per-unit charge does not handle.
func parseLimits(r *reader) error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	switch {
	case flags >= 0x04 && flags <= 0x07:
		return (&decoder{r: r}).unsupported("64-bit memory or table")
	case flags > 0x07:
		return r.errorf("invalid limits flags 0x%x", flags)
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&0x01 != 0 {
		_, err = r.u32()
	}
	return err
}

func parseGlobalType(d *decoder) error {
	if err := d.valType(); err != nil {
		return err
	}
	mut, err := d.r.byte()
	if err == nil && mut > 1 {
		err = d.r.errorf("invalid global mutability 0x%x", mut)
	}
	return err
}

func (m *module) parseGlobals(r *reader) error {
	d := &decoder{r: r}
	return vec(r, 3, func() error {
		m.globals++
		if err := parseGlobalType(d); err != nil {
			return err
		}
		return skipConstExpr(r)
	})
}

func parseExport(r *reader) error {
	name, err := r.name()
	if err != nil {
		return err
	}
	if err := checkName("export", name); err != nil {
		return err
	}
	kind, err := r.byte()
	switch {
	case err != nil:
		return err
	case kind > 0x04:
		return r.errorf("invalid export kind 0x%x", kind)
	case kind == 0x00:
		_, err = r.funcIndex()
	default:
		_, err = r.u32()
	}
	return err
}

// parseElement reads an element segment in any of its eight encodings:
// flag bit 0 passive or declarative, bit 1 an explicit table index (when
// active), bit 2 expressions instead of function indices.
func parseElement(r *reader) error {
	flags, err := r.u32()
	if err != nil {
		return err
	}
	if flags > 7 {
		return r.errorf("invalid element segment flags %d", flags)
	}
	active := flags&0x01 == 0
	if active && flags&0x02 != 0 {
		if _, err := r.u32(); err != nil { // table index
			return err
		}
	}
	if active {
		if err := skipConstExpr(r); err != nil { // offset
			return err
		}
	}
	if flags&0x03 != 0 { // element kind (0x00) or reference type
		if _, err := r.byte(); err != nil {
			return err
		}
	}
	if flags&0x04 == 0 {
		return vec(r, 1, func() error { _, err := r.funcIndex(); return err })
	}
	return vec(r, 2, func() error { return skipConstExpr(r) })
}

// parseData reads a data segment: 0 active, 1 passive, 2 active with an
// explicit memory index.
func parseData(r *reader) error {
	flags, err := r.u32()
	if err != nil {
		return err
	}
	switch flags {
	case 0:
	case 2:
		if _, err := r.u32(); err != nil {
			return err
		}
	case 1:
	default:
		return r.errorf("invalid data segment flags %d", flags)
	}
	if flags != 1 {
		if err := skipConstExpr(r); err != nil {
			return err
		}
	}
	n, err := r.u32()
	if err != nil {
		return err
	}
	_, err = r.bytes(uint64(n))
	return err
}

// parseCode splits the code section into function bodies; rewriteBody
// decodes each one.
func (m *module) parseCode(r *reader) error {
	return vec(r, 2, func() error {
		n, err := r.u32()
		if err != nil {
			return err
		}
		off := r.base + r.off
		b, err := r.bytes(uint64(n))
		if err != nil {
			return err
		}
		m.bodies = append(m.bodies, section{id: secCode, data: b, off: off})
		return nil
	})
}

// skipConstExpr reads a constant expression up to and including its end.
// Only straight-line instructions may appear in one; the engine checks
// which.
func skipConstExpr(r *reader) error {
	d := &decoder{r: r}
	for {
		in, err := d.next()
		if err != nil {
			return err
		}
		switch in.class {
		case classEnd:
			return nil
		case classPlain:
		default:
			return r.errorf("control instruction in a constant expression")
		}
	}
}
