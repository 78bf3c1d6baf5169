package redact

import "bytes"

// pathMarkers precede a path segment that is a secret (Palyra's list):
// /token/<secret>, /session/<id>.
var pathMarkers = [][]byte{
	[]byte("/token/"), []byte("/secret/"), []byte("/key/"), []byte("/password/"),
	[]byte("/credential/"), []byte("/session/"),
}

// pathSpans finds the segment after a path marker, in URLs and in bare
// paths alike, matched case-insensitively. "/keyboard/" and "/tokens/" are
// not markers.
func pathSpans(p, lower []byte) []span {
	var spans []span
	for _, m := range pathMarkers {
		for i := 0; ; {
			j := bytes.Index(lower[i:], m)
			if j < 0 {
				break
			}
			ctx := i + j
			start := ctx + len(m)
			end := start
			for end < len(p) && !isValueDelim(p[end]) && p[end] != '/' && p[end] != '?' && p[end] != '#' {
				end++
			}
			spans = append(spans, span{start: start, end: end, ctx: ctx, open: end == len(p)})
			i = ctx + 1
		}
	}
	return spans
}
