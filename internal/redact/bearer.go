package redact

import "bytes"

// bearerSpans finds the credential after the word "Bearer" (any case),
// when it is shaped like one: at least 6 bytes of RFC 6750 token
// characters with a digit or punctuation, or at least 16 letters. "the
// bearer of bad news" and "a Bearer token" are left alone.
func bearerSpans(p, lower []byte) []span {
	var spans []span
	for i := 0; ; {
		j := bytes.Index(lower[i:], []byte("bearer"))
		if j < 0 {
			return spans
		}
		start := i + j
		i = start + len("bearer")
		if start > 0 && isWordByte(p[start-1]) {
			continue
		}
		v := skipBlanks(p, i)
		switch {
		case v == i:
			continue
		case v == len(p):
			spans = append(spans, span{start: v, end: v, ctx: start, open: true})
			continue
		}
		end := v
		for end < len(p) && isTokenByte(p[end]) {
			end++
		}
		switch {
		case credentialShaped(p[v:end]):
			spans = append(spans, span{start: v, end: end, ctx: start, open: end == len(p)})
		case end == len(p):
			spans = append(spans, span{start: end, end: end, ctx: start, open: true}) // may grow into one
		}
	}
}

func isWordByte(c byte) bool { return isLowerOrDigit(c) || isUpper(c) || c == '_' }

// isTokenByte is RFC 6750's b64token alphabet.
func isTokenByte(c byte) bool {
	return isWordByte(c) || c == '-' || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

func credentialShaped(tok []byte) bool {
	if len(tok) >= 16 {
		return true
	}
	if len(tok) < 6 {
		return false
	}
	return bytes.ContainsFunc(tok, func(r rune) bool {
		return r >= '0' && r <= '9' || r == '-' || r == '.' || r == '~' || r == '+' || r == '/' || r == '=' || r == '_'
	})
}
