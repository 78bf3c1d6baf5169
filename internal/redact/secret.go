package redact

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Errors returned by AddSecret.
var (
	// ErrSecretTooShort reports a value shorter than MinSecretLength:
	// replacing every occurrence of it would destroy ordinary output.
	ErrSecretTooShort = errors.New("redact: secret is too short to redact without destroying output")
	// ErrSecretUnredactable reports a value that cannot be kept out of the
	// output because the marker itself spells it (or what remains of it
	// once the parts it shares with the marker are set aside is too short).
	ErrSecretUnredactable = errors.New("redact: secret overlaps the redaction marker")
)

// secretPatterns returns what AddSecret registers for s: s and its
// encodings (JSON string escaping, URL query and path escaping, unpadded
// standard and URL-safe base64 of s alone), each with its core (see core)
// when that differs. The error is for s itself; encodings whose core is
// unusable are skipped.
func secretPatterns(s string, minLen int) ([]string, error) {
	if len(s) < minLen {
		return nil, ErrSecretTooShort
	}
	if c, ok := core(s); !ok || len(c) < minLen {
		return nil, ErrSecretUnredactable
	}
	var out []string
	for _, v := range []string{
		s, jsonEscape(s), url.QueryEscape(s), url.PathEscape(s),
		base64.RawStdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)),
	} {
		c, ok := core(v)
		if !ok || len(c) < minLen {
			continue
		}
		for _, p := range []string{v, c} {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// core returns the part of s that cannot overlap Marker in any output.
//
// Output is original text with some ranges replaced by Marker. An
// occurrence of s in it either lies in original text (where it was found
// and replaced, so it cannot) or overlaps a Marker: s contains Marker,
// lies inside it, starts with the end of it ("d>...") or ends with the
// start of it ("...<re"). core strips those parts until none is left.
// Since the core is a substring of s, any output containing s contains
// the core, which then must lie in original text, where it was redacted:
// registering the core as well keeps s out of every output. ok is false
// when nothing is left.
func core(s string) (string, bool) {
	for {
		if i := strings.Index(s, Marker); i >= 0 {
			s = longestPiece(strings.Split(s, Marker))
			continue
		}
		if k := border(s, true); k > 0 {
			s = s[k:]
			continue
		}
		if k := border(s, false); k > 0 {
			s = s[:len(s)-k]
			continue
		}
		break
	}
	return s, s != "" && !strings.Contains(Marker, s)
}

// border returns the length of the longest prefix of s that is a proper
// suffix of Marker (left), or of the longest suffix of s that is a proper
// prefix of Marker (right).
func border(s string, left bool) int {
	for k := min(len(s), len(Marker)-1); k > 0; k-- {
		if left && s[:k] == Marker[len(Marker)-k:] || !left && s[len(s)-k:] == Marker[:k] {
			return k
		}
	}
	return 0
}

func longestPiece(pieces []string) string {
	best := ""
	for _, p := range pieces {
		if len(p) > len(best) {
			best = p
		}
	}
	return best
}

// secretSpans finds every occurrence, overlapping ones included, of every
// pattern in p.
func secretSpans(p []byte, patterns []string) []span {
	var spans []span
	for _, ps := range patterns {
		pat := []byte(ps)
		for from := 0; from <= len(p)-len(pat); {
			i := bytes.Index(p[from:], pat)
			if i < 0 {
				break
			}
			start := from + i
			spans = append(spans, span{start: start, end: start + len(pat), ctx: start})
			from = start + 1
		}
	}
	return spans
}
