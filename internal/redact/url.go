package redact

import (
	"bytes"
	"net/url"
)

// urlSpans finds URLs ("scheme://...") and their secrets: the userinfo,
// dropped with its '@' (https://user:pass@host/ becomes https://host/),
// and the values of sensitive keys in the query and in the fragment
// (#access_token=... of OAuth implicit grants), keys percent-decoded.
// Path segments are handled by pathSpans.
func (r *Redactor) urlSpans(p []byte) []span {
	var spans []span
	for i := 0; ; {
		j := bytes.Index(p[i:], []byte("://"))
		if j < 0 {
			return spans
		}
		sep := i + j
		i = sep + 3
		start := schemeStart(p, sep)
		if start < 0 {
			continue
		}
		end := i
		for end < len(p) && !isURLDelim(p[end]) {
			end++
		}
		spans = append(spans, r.urlParts(p, start, sep+3, end)...)
		if end == len(p) {
			spans = append(spans, span{start: end, end: end, ctx: start, open: true})
		}
		i = end // URLs do not nest; rescanning would be quadratic
	}
}

// schemeStart returns where the scheme ending at sep starts, or -1.
func schemeStart(p []byte, sep int) int {
	s := sep
	for s > 0 && (isWordByte(p[s-1]) && p[s-1] != '_' || p[s-1] == '+' || p[s-1] == '-' || p[s-1] == '.') {
		s--
	}
	for s < sep && !(isUpper(p[s]) || isLower(p[s])) {
		s++
	}
	if s == sep {
		return -1
	}
	return s
}

func isURLDelim(c byte) bool {
	return c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>'
}

// urlParts returns the spans of the URL p[start:end] whose authority
// begins at auth.
func (r *Redactor) urlParts(p []byte, start, auth, end int) []span {
	var spans []span
	authEnd := auth
	for authEnd < end && p[authEnd] != '/' && p[authEnd] != '?' && p[authEnd] != '#' {
		authEnd++
	}
	if at := bytes.LastIndexByte(p[auth:authEnd], '@'); at >= 0 {
		spans = append(spans, span{start: auth, end: auth + at + 1, drop: true, ctx: start})
	}
	if q := bytes.IndexByte(p[authEnd:end], '?'); q >= 0 {
		qs, qe := authEnd+q+1, end
		if h := bytes.IndexByte(p[qs:end], '#'); h >= 0 {
			qe = qs + h
		}
		spans = append(spans, r.paramSpans(p, qs, qe, start)...)
	}
	if f := bytes.IndexByte(p[authEnd:end], '#'); f >= 0 {
		spans = append(spans, r.paramSpans(p, authEnd+f+1, end, start)...)
	}
	return spans
}

// paramSpans returns the values of sensitive keys in p[from:to], a list of
// key=value separated by '&' or ';'.
func (r *Redactor) paramSpans(p []byte, from, to, ctx int) []span {
	var spans []span
	for k := from; k < to; {
		e := k
		for e < to && p[e] != '&' && p[e] != ';' {
			e++
		}
		if eq := bytes.IndexByte(p[k:e], '='); eq > 0 && k+eq+1 < e {
			key := string(p[k : k+eq])
			if u, err := url.QueryUnescape(key); err == nil {
				key = u
			}
			if r.isSensitiveKey(key) {
				spans = append(spans, span{start: k + eq + 1, end: e, ctx: ctx})
			}
		}
		k = e + 1
	}
	return spans
}
