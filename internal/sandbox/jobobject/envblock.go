package jobobject

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// EnvBlock returns the environment block CreateProcess gets with
// CREATE_UNICODE_ENVIRONMENT: each KEY=VALUE of Env in UTF-16, NUL
// terminated, sorted by name as Windows requires (case-insensitively, by
// the upper-cased name's UTF-16 code units), and a final NUL. An empty
// environment is two NULs.
func (p Plan) EnvBlock() ([]uint16, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	env, _ := p.environment()
	return envBlock(env), nil
}

// envBlock encodes sorted, checked entries as an environment block.
func envBlock(env []string) []uint16 {
	var block []uint16
	for _, kv := range env {
		block = append(block, utf16.Encode([]rune(kv))...)
		block = append(block, 0)
	}
	if len(block) == 0 {
		block = append(block, 0)
	}
	return append(block, 0)
}

// environment checks Env and returns it sorted as in the block. A name is
// not empty, has no "=" (the first one ends it, so a name starting with
// "=", like the hidden "=C:" variables, reads as empty) and appears once,
// ignoring case; no entry has NUL or invalid UTF-8. Errors name variables
// but never quote a value, which may be a secret.
func (p Plan) environment() ([]string, error) {
	type entry struct {
		key []uint16 // upper-cased name in UTF-16, the sort key
		kv  string
	}
	entries := make([]entry, 0, len(p.Env))
	for _, kv := range p.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: environment entry %d is not KEY=VALUE", ErrInvalidPlan, len(entries))
		}
		if strings.ContainsRune(kv, 0) || !utf8.ValidString(kv) {
			return nil, fmt.Errorf("%w: environment variable %q contains NUL or is not UTF-8", ErrInvalidPlan, k)
		}
		entries = append(entries, entry{utf16.Encode([]rune(strings.ToUpper(k))), kv})
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return slices.Compare(a.key, b.key) })
	out := make([]string, len(entries))
	for i, e := range entries {
		if i > 0 && slices.Equal(e.key, entries[i-1].key) {
			prev, _, _ := strings.Cut(entries[i-1].kv, "=")
			name, _, _ := strings.Cut(e.kv, "=")
			return nil, fmt.Errorf("%w: environment names %q and %q differ only in case or repeat", ErrInvalidPlan, prev, name)
		}
		out[i] = e.kv
	}
	return out, nil
}

// envNames returns the sorted environment's names.
func (p Plan) envNames() []string {
	env, _ := p.environment()
	names := make([]string, len(env))
	for i, kv := range env {
		names[i], _, _ = strings.Cut(kv, "=")
	}
	return names
}
