package manifest

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// keyLines maps each key of a TOML document, and each entry of its
// arrays, to the line it starts on, by path.id(): [[x]]'s tables are x's
// entries, "x.0", "x.1"..., and the other tables and dotted keys' parents
// are at the line that first names them. Paths longer than maxLineDepth
// are not recorded (a problem there is reported at the line of its
// ancestor at that depth), so that deep nesting costs linear time and
// memory. tooDeep is the first line where a value nests deeper than
// maxNesting, 0 if none does.
//
// The TOML decoder has key positions, but not exported and not per entry
// of an array of tables, so this is a lexical scan of its own. It is
// exact on documents the decoder accepts; on any other input it returns
// what it could read, and never fails (FuzzKeyLines checks both).
func keyLines(data []byte) (lines map[string]int, tooDeep int) {
	l := &locator{src: data, line: 1, lines: map[string]int{}, arrays: map[string]int{}}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		l.pos = 3
	}
	l.document()
	return l.lines, l.tooDeep
}

const (
	// maxLineDepth is the longest path keyLines records: deeper than any
	// key of the manifest's own tables.
	maxLineDepth = 8
	// maxNesting bounds how deep a manifest's values nest (keys, arrays and
	// inline tables): the TOML decoder's time grows with the square of it.
	maxNesting = 64
)

type locator struct {
	src     []byte
	pos     int
	line    int
	lines   map[string]int // path.id() → line
	arrays  map[string]int // [[header]] tables seen, by path.id()
	tooDeep int
}

// place is where a value is: its path, cut after maxLineDepth parts, and
// its depth, not cut.
type place struct {
	at    path
	depth int
}

func (p place) child(k string) place {
	if len(p.at) > maxLineDepth {
		return place{p.at, p.depth + 1}
	}
	return place{p.at.key(k), p.depth + 1}
}

func (l *locator) document() {
	var table place
	for l.skip(true); !l.eof(); l.skip(true) {
		start := l.pos
		switch {
		case l.at("[["):
			table = l.header(2)
		case l.at("["):
			table = l.header(1)
		default:
			l.keyValue(table, false)
		}
		if l.pos == start { // not TOML: step over a byte
			l.advance()
		}
	}
}

// header reads a [table] or [[array.of.tables]] header (brackets 1 or 2)
// and returns the table's place.
func (l *locator) header(brackets int) place {
	line := l.line
	l.pos += brackets
	keys := l.key()
	for i := 0; i < brackets && l.at("]"); i++ {
		l.pos++
	}
	if len(keys) == 0 {
		return place{}
	}
	depth := len(keys) + brackets - 1
	keys = keys[:min(len(keys), maxLineDepth+1)]
	table := l.resolve(keys)
	if brackets == 2 {
		table = l.resolve(keys[:len(keys)-1]).key(keys[len(keys)-1])
		n := l.arrays[table.id()]
		l.arrays[table.id()] = n + 1
		table = table.index(n)
	}
	p := place{table, depth}
	l.set(p, line)
	return p
}

// resolve is keys with, after each that names an array of tables, the
// index of its last table: [tools.risk] after [[tools]] is tools.N.risk.
func (l *locator) resolve(keys []string) path {
	var p path
	for _, k := range keys {
		p = p.key(k)
		if n := l.arrays[p.id()]; n > 0 {
			p = p.index(n - 1)
		}
	}
	return p
}

// set records p's line, and its parents' if they have none yet.
func (l *locator) set(p place, line int) {
	if p.depth > maxNesting && l.tooDeep == 0 {
		l.tooDeep = line
	}
	if len(p.at) > maxLineDepth {
		return
	}
	for i := 1; i < len(p.at); i++ {
		if _, ok := l.lines[p.at[:i].id()]; !ok {
			l.lines[p.at[:i].id()] = line
		}
	}
	l.lines[p.at.id()] = line
}

// keyValue reads "key = value" in table; inline, within { }, newlines
// may separate the parts.
func (l *locator) keyValue(table place, inline bool) bool {
	line := l.line
	keys := l.key()
	l.skip(inline)
	if len(keys) == 0 || !l.at("=") {
		return false
	}
	l.pos++
	p := table
	for _, k := range keys {
		p = p.child(k)
	}
	l.set(p, line)
	l.skip(inline)
	l.value(p)
	return true
}

// key reads a key, dotted parts each bare or quoted.
func (l *locator) key() []string {
	var parts []string
	for {
		l.skip(false)
		part, ok := l.keyPart()
		if !ok {
			return parts
		}
		parts = append(parts, part)
		l.skip(false)
		if !l.at(".") {
			return parts
		}
		l.pos++
	}
}

func (l *locator) keyPart() (string, bool) {
	switch {
	case l.at(`"`):
		return l.basic(), true
	case l.at("'"):
		return l.literal(), true
	}
	start := l.pos
	for !l.eof() && isBare(rune(l.src[l.pos])) {
		l.pos++
	}
	return string(l.src[start:l.pos]), l.pos > start
}

func (l *locator) value(p place) {
	switch {
	case l.at(`"""`), l.at("'''"):
		l.multiline()
	case l.at(`"`):
		l.basic()
	case l.at("'"):
		l.literal()
	case l.at("["):
		l.array(p)
	case l.at("{"):
		l.inlineTable(p)
	default: // a number, boolean or date: up to a delimiter
		for !l.eof() && bytes.IndexByte([]byte(",]}#\n"), l.src[l.pos]) < 0 {
			l.pos++
		}
	}
}

func (l *locator) array(p place) {
	l.pos++
	for i := 0; ; i++ {
		l.skip(true)
		if l.eof() || l.at("]") {
			break
		}
		entry := p.child(strconv.Itoa(i))
		l.set(entry, l.line)
		l.value(entry)
		l.skip(true)
		if !l.at(",") {
			break
		}
		l.pos++
	}
	if l.at("]") {
		l.pos++
	}
}

func (l *locator) inlineTable(p place) {
	l.pos++
	for {
		l.skip(true)
		if l.eof() || l.at("}") || !l.keyValue(p, true) {
			break
		}
		l.skip(true)
		if !l.at(",") {
			break
		}
		l.pos++
	}
	if l.at("}") {
		l.pos++
	}
}

// basic reads a one-line "string" and returns its value.
func (l *locator) basic() string {
	l.pos++
	var b []byte
	for !l.eof() {
		switch c := l.src[l.pos]; c {
		case '"':
			l.pos++
			return string(b)
		case '\n':
			return string(b)
		case '\\':
			b = l.escape(b)
		default:
			b = append(b, c)
			l.pos++
		}
	}
	return string(b)
}

// escape appends the value of the escape sequence at l.pos to b.
func (l *locator) escape(b []byte) []byte {
	l.pos++
	if l.eof() {
		return b
	}
	c := l.src[l.pos]
	l.pos++
	digits := 0
	switch c {
	case 'b', 't', 'n', 'f', 'r', 'e':
		return append(b, "\b\t\n\f\r\x1b"[strings.IndexByte("btnfre", c)])
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	default: // " and \
		return append(b, c)
	}
	if l.pos+digits > len(l.src) {
		return b
	}
	n, err := strconv.ParseUint(string(l.src[l.pos:l.pos+digits]), 16, 32)
	if err != nil {
		return b
	}
	l.pos += digits
	return utf8.AppendRune(b, rune(n))
}

// literal reads a one-line 'string' and returns its value.
func (l *locator) literal() string {
	l.pos++
	start := l.pos
	for !l.eof() && l.src[l.pos] != '\'' && l.src[l.pos] != '\n' {
		l.pos++
	}
	s := string(l.src[start:l.pos])
	if l.at("'") {
		l.pos++
	}
	return s
}

// multiline steps over a multi-line string, basic or literal (three
// quotes each side), counting its lines. Up to two quotes may end its text
// before the closing three.
func (l *locator) multiline() {
	q := l.src[l.pos]
	l.pos += 3
	for !l.eof() {
		switch c := l.src[l.pos]; {
		case c == '\\' && q == '"':
			l.pos++
			if !l.eof() {
				l.advance()
			}
		case c == q && l.at(string([]byte{q, q, q})):
			for n := 0; n < 5 && l.at(string(q)); n++ {
				l.pos++
			}
			return
		default:
			l.advance()
		}
	}
}

// skip steps over blanks and comments, and newlines too if newlines.
func (l *locator) skip(newlines bool) {
	for !l.eof() {
		switch c := l.src[l.pos]; {
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
		case c == '\n' && newlines:
			l.advance()
		case c == '#':
			for !l.eof() && l.src[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

func (l *locator) advance() {
	if l.src[l.pos] == '\n' {
		l.line++
	}
	l.pos++
}

func (l *locator) eof() bool { return l.pos >= len(l.src) }

func (l *locator) at(s string) bool { return bytes.HasPrefix(l.src[l.pos:], []byte(s)) }
