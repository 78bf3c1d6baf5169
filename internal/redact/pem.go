package redact

import "bytes"

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
)

// pemSpans finds the bodies of PEM private keys ("-----BEGIN RSA PRIVATE
// KEY-----" and the like), which no key=value rule sees. A block without
// its END line is redacted to the end of the input.
func pemSpans(p []byte) []span {
	var spans []span
	for i := 0; ; {
		j := bytes.Index(p[i:], pemBegin)
		if j < 0 {
			return spans
		}
		ctx := i + j
		i = ctx + len(pemBegin)
		eol := lineEnd(p, i)
		label := p[i:eol]
		if eol == len(p) {
			spans = append(spans, span{start: eol, end: eol, ctx: ctx, open: true}) // header not complete yet
			return spans
		}
		if !bytes.Contains(label, []byte("PRIVATE KEY")) || !bytes.Contains(label, []byte("-----")) {
			continue
		}
		start := eol + 1
		k := bytes.Index(p[start:], pemEnd)
		if k < 0 {
			return append(spans, span{start: start, end: trimNewlines(p, start, len(p)), ctx: ctx, open: true})
		}
		k += start
		// The body, and a zero-width guard keeping a Writer from cutting
		// between BEGIN and END.
		spans = append(spans, span{start: start, end: trimNewlines(p, start, k), ctx: ctx},
			span{start: k + 1, end: k + 1, ctx: ctx})
		i = k
	}
}

// trimNewlines moves end back over line endings, not before start.
func trimNewlines(p []byte, start, end int) int {
	for end > start && (p[end-1] == '\n' || p[end-1] == '\r') {
		end--
	}
	return end
}
