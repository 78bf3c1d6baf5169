package redact

import (
	"slices"
	"sync"
)

// Marker replaces every redacted value.
const Marker = "<redacted>"

// DefaultMinSecretLength is the shortest value AddSecret accepts by default.
const DefaultMinSecretLength = 4

// Options configure a Redactor.
type Options struct {
	// ExtraKeys are sensitive keys beyond the built-in ones, normalised the
	// same way (case, '-', '.', camelCase).
	ExtraKeys []string
	// MinSecretLength is the shortest value AddSecret accepts (default 4).
	MinSecretLength int
}

// A Redactor removes secrets from bytes, strings and JSON. It is safe for
// concurrent use; AddSecret may be called while others redact.
type Redactor struct {
	extraKeys map[string]bool
	minSecret int

	mu       sync.RWMutex
	patterns []string // replaced, never modified in place, on AddSecret
}

// New returns a Redactor with the built-in heuristics and no secrets.
func New(opts Options) *Redactor {
	r := &Redactor{extraKeys: map[string]bool{}, minSecret: opts.MinSecretLength}
	if r.minSecret <= 0 {
		r.minSecret = DefaultMinSecretLength
	}
	for _, k := range opts.ExtraKeys {
		if n := normalizeKey(k); n != "" {
			r.extraKeys[n] = true
		}
	}
	return r
}

// AddSecret registers a value to be replaced wherever it appears, however
// it is found, together with its JSON-escaped, URL-escaped and base64
// forms. It returns ErrSecretTooShort for values shorter than
// MinSecretLength and ErrSecretUnredactable for values the marker itself
// would reveal (see core); neither is registered.
func (r *Redactor) AddSecret(s string) error {
	pats, err := secretPatterns(s, r.minSecret)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := slices.Clone(r.patterns)
	for _, p := range pats {
		if !slices.Contains(next, p) {
			next = append(next, p)
		}
	}
	r.patterns = next
	return nil
}

// secretPatterns returns the registered patterns; the slice is never
// modified afterwards.
func (r *Redactor) secretPatterns() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.patterns
}

// Bytes returns p with secrets replaced by Marker (URL userinfo is
// dropped). p may hold any bytes; everything not redacted is copied
// unchanged. No added secret appears in the result.
func (r *Redactor) Bytes(p []byte) []byte {
	return r.redact(p, false)
}

// redact is Bytes for p that starts mid-line when midLine is set.
func (r *Redactor) redact(p []byte, midLine bool) []byte {
	pats := r.secretPatterns()
	out, dropped := apply(p, r.scan(p, pats, midLine))
	if dropped && len(pats) > 0 {
		// Dropping userinfo joins text that was apart; look again.
		out, _ = apply(out, secretSpans(out, pats))
	}
	return out
}

// String is Bytes for strings.
func (r *Redactor) String(s string) string {
	return string(r.Bytes([]byte(s)))
}

// scan finds every range to redact in p.
func (r *Redactor) scan(p []byte, pats []string, midLine bool) []span {
	lower := asciiLower(p)
	spans := r.keyValueSpans(p, midLine)
	spans = append(spans, bearerSpans(p, lower)...)
	spans = append(spans, pathSpans(p, lower)...)
	spans = append(spans, r.urlSpans(p)...)
	spans = append(spans, pemSpans(p)...)
	return append(spans, secretSpans(p, pats)...)
}

// asciiLower lower-cases ASCII letters only, keeping every offset.
func asciiLower(p []byte) []byte {
	out := make([]byte, len(p))
	for i, c := range p {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
