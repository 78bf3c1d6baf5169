package bundle

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// parseEventLine decodes a line holding an event record, into l, without
// encoding/json, whose reflection and two passes over every byte were most
// of a verification's time. It reads only the shape a Writer writes: one
// flat object of the event's members, in any order, each a string or an
// integer; strings in valid UTF-8 whose escapes are not surrogates;
// integers without fraction or exponent. On anything else (another kind,
// another member, a value of another type, bad JSON) it returns false,
// and ParseRecord decodes the line with encoding/json, which then decides.
// So it never accepts what encoding/json refuses or reads a line
// differently: FuzzParseRecord checks that both decoders agree.
func parseEventLine(b []byte, l *line) bool {
	x := lexer{b: b, out: make([]byte, 0, len(b))}
	if !x.next('{') {
		return false
	}
	if !x.next('}') {
		for {
			key, ok := x.key()
			if !ok || !x.next(':') || !x.member(key, l) {
				return false
			}
			if x.next(',') {
				continue
			}
			if x.next('}') {
				break
			}
			return false
		}
	}
	x.space()
	return x.i == len(b) && l.Kind == KindEvent
}

// lexer reads JSON from b at i. The strings it decodes are appended to
// out, which has room for them all (decoding only shortens): one
// allocation per line.
type lexer struct {
	b   []byte
	i   int
	out []byte
}

func (x *lexer) space() {
	for x.i < len(x.b) {
		switch x.b[x.i] {
		case ' ', '\t', '\n', '\r':
			x.i++
		default:
			return
		}
	}
}

// next consumes c, after white space, if it comes next.
func (x *lexer) next(c byte) bool {
	x.space()
	if x.i < len(x.b) && x.b[x.i] == c {
		x.i++
		return true
	}
	return false
}

// key reads a member name of plain ASCII, without escapes.
func (x *lexer) key() ([]byte, bool) {
	if !x.next('"') {
		return nil, false
	}
	start := x.i
	for x.i < len(x.b) {
		c := x.b[x.i]
		switch {
		case c == '"':
			x.i++
			return x.b[start : x.i-1], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
		x.i++
	}
	return nil, false
}

// member reads the value of the member key into l.
func (x *lexer) member(key []byte, l *line) bool {
	var ok bool
	switch string(key) {
	case "kind":
		l.Kind, ok = x.str()
	case "leaf":
		l.Leaf.V, ok = x.uint()
		l.Leaf.Set = ok
	case "position":
		l.Position.V, ok = x.int()
		l.Position.Set = ok
	case "version":
		l.Version.V, ok = x.int()
		l.Version.Set = ok
	case "recorded_at_us":
		l.RecordedAtUS.V, ok = x.int()
		l.RecordedAtUS.Set = ok
	case "stream":
		l.Stream, ok = x.str()
	case "type":
		l.Type, ok = x.str()
	case "payload":
		l.Payload, ok = x.text()
	case "metadata":
		l.Metadata, ok = x.text()
	case "hash":
		l.Hash, ok = x.str()
	case "leaf_hash":
		var s []byte
		if s, ok = x.text(); ok {
			// As encoding/json decodes a []byte member.
			l.LeafHash = make([]byte, base64.StdEncoding.DecodedLen(len(s)))
			n, err := base64.StdEncoding.Decode(l.LeafHash, s)
			l.LeafHash, ok = l.LeafHash[:n], err == nil
		}
	}
	return ok
}

func (x *lexer) str() (string, bool) {
	b, ok := x.text()
	return string(b), ok
}

// text reads a string's value into out and returns it.
func (x *lexer) text() ([]byte, bool) {
	if !x.next('"') {
		return nil, false
	}
	from := len(x.out)
	dst := x.out
	ascii := true
	for {
		start := x.i
		for x.i < len(x.b) {
			c := x.b[x.i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			if c >= utf8.RuneSelf {
				ascii = false
			}
			x.i++
		}
		dst = append(dst, x.b[start:x.i]...)
		if x.i == len(x.b) || x.b[x.i] < 0x20 {
			return nil, false
		}
		if x.b[x.i] == '"' {
			x.i++
			x.out = dst
			v := dst[from:len(dst):len(dst)]
			// Escapes add only whole, valid sequences, so the text is
			// valid UTF-8 if and only if the raw bytes were.
			return v, ascii || utf8.Valid(v)
		}
		var ok bool
		if dst, ok = x.escape(dst); !ok {
			return nil, false
		}
	}
}

// escape reads the escape sequence at i, appending what it stands for.
func (x *lexer) escape(dst []byte) ([]byte, bool) {
	if x.i+1 >= len(x.b) {
		return nil, false
	}
	c := x.b[x.i+1]
	x.i += 2
	switch c {
	case '"', '\\', '/':
		return append(dst, c), true
	case 'b':
		return append(dst, '\b'), true
	case 'f':
		return append(dst, '\f'), true
	case 'n':
		return append(dst, '\n'), true
	case 'r':
		return append(dst, '\r'), true
	case 't':
		return append(dst, '\t'), true
	case 'u':
		if x.i+4 > len(x.b) {
			return nil, false
		}
		r, err := strconv.ParseUint(string(x.b[x.i:x.i+4]), 16, 16)
		if err != nil || r >= 0xd800 && r < 0xe000 { // surrogates: left to encoding/json
			return nil, false
		}
		x.i += 4
		return utf8.AppendRune(dst, rune(r)), true
	}
	return nil, false
}

// digits reads a JSON integer: an optional minus if signed, then 0 or a
// digit 1-9 and digits; not followed by a fraction or an exponent.
func (x *lexer) digits(signed bool) ([]byte, bool) {
	x.space()
	start := x.i
	if signed && x.i < len(x.b) && x.b[x.i] == '-' {
		x.i++
	}
	first := x.i
	for x.i < len(x.b) && x.b[x.i] >= '0' && x.b[x.i] <= '9' {
		x.i++
	}
	n := x.i - first
	if n == 0 || n > 1 && x.b[first] == '0' {
		return nil, false
	}
	if x.i < len(x.b) {
		switch x.b[x.i] {
		case '.', 'e', 'E':
			return nil, false
		}
	}
	return x.b[start:x.i], true
}

func (x *lexer) uint() (uint64, bool) {
	d, ok := x.digits(false)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d), 10, 64)
	return v, err == nil
}

func (x *lexer) int() (int64, bool) {
	d, ok := x.digits(true)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(d), 10, 64)
	return v, err == nil
}
