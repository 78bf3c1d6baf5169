package redact

import (
	"strconv"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string. Unlike encoding/json it
// does not escape '<', '>' and '&' (so Marker stays readable); it escapes
// control characters, U+2028 and U+2029, and replaces invalid UTF-8 with
// U+FFFD, so the result is always valid JSON.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, `\u00`...)
				b = append(b, hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u`...)
			b = strconv.AppendInt(b, int64(r), 16)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

const hex = "0123456789abcdef"

// jsonEscape is s as it appears inside a JSON string.
func jsonEscape(s string) string {
	b := appendJSONString(nil, s)
	return string(b[1 : len(b)-1])
}
