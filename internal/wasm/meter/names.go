package meter

// The name section (a custom section named "name") gives functions and
// their locals names by function index. With Options.Yield those indices
// shift, and a stale section would name the wrong functions in the
// engine's backtraces.

// Name subsections that are maps keyed by function index.
const (
	nameFunctions = 1 // function index -> name
	nameLocals    = 2 // function index -> local index -> name
	nameLabels    = 3 // function index -> label index -> name (extended name section)
)

// isNameSection reports whether the custom section r reads is the name
// section, leaving r after its name.
func isNameSection(r *reader) bool {
	name, err := r.name()
	return err == nil && name == "name"
}

// renumberNames returns the contents of a name section with its function
// indices shifted for the yield import, and false if it is malformed.
// Subsections other than the function, local and label names hold no
// function index and are kept as they are.
func renumberNames(data []byte, imported uint32) ([]byte, bool) {
	r := newReader(data, 0)
	if !isNameSection(r) {
		return nil, false
	}
	out := append([]byte(nil), data[:r.off]...)
	for r.len() > 0 {
		id, err := r.byte()
		if err != nil {
			return nil, false
		}
		size, err := r.u32()
		if err != nil {
			return nil, false
		}
		body, err := r.bytes(uint64(size))
		if err != nil {
			return nil, false
		}
		sub := newReader(body, 0)
		var renamed []byte
		switch id {
		case nameFunctions:
			renamed, err = renumberNameMap(sub, imported, false)
		case nameLocals, nameLabels:
			renamed, err = renumberNameMap(sub, imported, true)
		default:
			renamed = body
		}
		if err != nil {
			return nil, false
		}
		out = appendUleb(append(out, id), uint64(len(renamed)))
		out = append(out, renamed...)
	}
	return out, true
}

// renumberNameMap renumbers the function indices of a name map, or of an
// indirect name map (whose values, maps of local or label indices, are
// copied unchanged). It reads the whole of r.
func renumberNameMap(r *reader, imported uint32, indirect bool) ([]byte, error) {
	n, err := r.count(2)
	if err != nil {
		return nil, err
	}
	out := appendUleb(nil, uint64(n))
	for range n {
		i, err := r.u32()
		if err != nil {
			return nil, err
		}
		out = appendUleb(out, shifted(i, imported))
		start := r.off
		if indirect {
			err = vec(r, 2, func() error {
				if _, err := r.u32(); err != nil {
					return err
				}
				_, err := r.name()
				return err
			})
		} else {
			_, err = r.name()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.b[start:r.off]...)
	}
	return out, r.expectEnd("name map")
}
