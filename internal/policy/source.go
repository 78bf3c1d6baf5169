package policy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Source is one policy document: a name (the file's base name for [Load])
// and its Cedar text.
type Source struct {
	Name string
	Text []byte
}

// Load reads and parses the policy files in the given order. An empty list
// is an error; a parse error names the file and the position.
func Load(paths ...string) (*Engine, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("policy: load: no policy files given")
	}
	sources := make([]Source, 0, len(paths))
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("policy: load: %w", err)
		}
		sources = append(sources, Source{Name: filepath.Base(p), Text: text})
	}
	return FromSources(sources)
}

// cloneSources deep-copies sources so that callers cannot mutate what the
// engine loaded (or what it hands out).
func cloneSources(in []Source) []Source {
	out := make([]Source, len(in))
	for i, s := range in {
		out[i] = Source{Name: s.Name, Text: bytes.Clone(s.Text)}
	}
	return out
}
