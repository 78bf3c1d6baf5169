package redact

import (
	"bytes"
	"strings"
)

// keyValueSpans finds values of sensitive keys in free text: key=value,
// key: value, key => value, "key": "value", 'key': 'value', and the
// escaped \"key\": \"value\" of JSON inside a string. A header or YAML
// line (the key first on its line, ": " after it) loses the rest of the
// line; otherwise the value is one quoted string or one token, plus the
// credential after an authentication scheme (Authorization=Basic dXNl...).
func (r *Redactor) keyValueSpans(p []byte, midLine bool) []span {
	var spans []span
	for i := 0; i < len(p); i++ {
		if !isSeparator(p, i) {
			continue
		}
		key, ctx, ok := keyBefore(p, i)
		if !ok || !r.isSensitiveKey(key) {
			continue
		}
		if s, ok := valueAfter(p, i, ctx, isHeaderSeparator(p, i) && atLineStart(p, ctx, midLine)); ok {
			spans = append(spans, s)
			i = max(i, s.end-1) // a redacted value holds no further keys worth finding
		}
	}
	return spans
}

// isSeparator reports a '=' or ':' that can separate a key from a value:
// not "==", "!=", "<=", ">=", "::" or "://".
func isSeparator(p []byte, i int) bool {
	next := func(k int) byte {
		if i+k < len(p) {
			return p[i+k]
		}
		return 0
	}
	switch p[i] {
	case '=':
		return next(1) != '=' && (i == 0 || !strings.ContainsRune("=!<>", rune(p[i-1])))
	case ':':
		return next(1) != ':' && (i == 0 || p[i-1] != ':') && !(next(1) == '/' && next(2) == '/')
	}
	return false
}

// isHeaderSeparator reports ": " (or ":\t"), as in HTTP headers and YAML.
func isHeaderSeparator(p []byte, i int) bool {
	return p[i] == ':' && i+1 < len(p) && (p[i+1] == ' ' || p[i+1] == '\t')
}

// keyBefore returns the key ending at the separator at i (blanks and a
// closing quote allowed in between) and where its text starts.
func keyBefore(p []byte, i int) (string, int, bool) {
	j := i
	for j > 0 && (p[j-1] == ' ' || p[j-1] == '\t') {
		j--
	}
	if j > 0 && (p[j-1] == '"' || p[j-1] == '\'') {
		q := p[j-1]
		from := max(0, j-1-256)
		open := bytes.LastIndexByte(p[from:j-1], q)
		if open < 0 {
			return "", 0, false
		}
		open += from
		key := p[open+1 : j-1]
		if bytes.IndexByte(key, '\n') >= 0 {
			return "", 0, false
		}
		return strings.Trim(string(key), `\`), open, true
	}
	k := j
	for k > 0 && isKeyChar(p[k-1]) {
		k--
	}
	return string(p[k:j]), k, k < j
}

// atLineStart reports a key preceded on its line only by blanks and the
// markers of lists and of curl -v ("- ", "* ", "> ", "< "). midLine says
// p starts in the middle of a line (a Writer's later chunk).
func atLineStart(p []byte, ctx int, midLine bool) bool {
	k := ctx
	for k > 0 && strings.IndexByte(" \t-*<>", p[k-1]) >= 0 {
		k--
	}
	if k == 0 {
		return !midLine
	}
	return p[k-1] == '\n'
}

// valueAfter returns the span of the value after the separator at i.
func valueAfter(p []byte, i, ctx int, restOfLine bool) (span, bool) {
	v := i + 1
	if p[i] == '=' && v < len(p) && p[v] == '>' {
		v++
	}
	v = skipBlanks(p, v)
	if v == len(p) {
		return span{start: v, end: v, ctx: ctx, open: true}, true // value not seen yet
	}
	switch c := p[v]; {
	case c == '"' || c == '\'' || c == '`':
		return quotedValue(p, v+1, ctx, []byte{c})
	case c == '\\' && v+1 < len(p) && (p[v+1] == '"' || p[v+1] == '\''):
		return quotedValue(p, v+2, ctx, []byte{'\\', p[v+1]})
	case restOfLine:
		end := lineEnd(p, v)
		e := end
		for e > v && (p[e-1] == ' ' || p[e-1] == '\t' || p[e-1] == '\r') {
			e--
		}
		return span{start: v, end: e, ctx: ctx, open: end == len(p)}, e > v
	case isValueDelim(c):
		return span{}, false
	}
	end := tokenEnd(p, v)
	if isAuthScheme(p[v:end]) {
		if next := skipBlanks(p, end); next > end && next < len(p) && !isValueDelim(p[next]) {
			end = tokenEnd(p, next)
		} else if next == len(p) {
			return span{start: v, end: next, ctx: ctx, open: true}, true
		}
	}
	return span{start: v, end: end, ctx: ctx, open: end == len(p)}, true
}

// quotedValue returns the span from start to the closing quote (skipping
// backslash escapes), or to the end of the line if there is none.
func quotedValue(p []byte, start, ctx int, quote []byte) (span, bool) {
	for j := start; j < len(p); j++ {
		switch {
		case p[j] == '\n':
			return span{start: start, end: j, ctx: ctx}, j > start
		case bytes.HasPrefix(p[j:], quote):
			return span{start: start, end: j, ctx: ctx}, j > start
		case p[j] == '\\':
			j++
		}
	}
	return span{start: start, end: len(p), ctx: ctx, open: true}, true
}

// isAuthScheme reports an HTTP authentication scheme name, after which the
// credential follows.
func isAuthScheme(tok []byte) bool {
	switch strings.ToLower(string(tok)) {
	case "basic", "bearer", "digest", "negotiate", "ntlm", "token", "aws4-hmac-sha256", "hoba", "mutual", "vapid", "dpop":
		return true
	}
	return false
}
