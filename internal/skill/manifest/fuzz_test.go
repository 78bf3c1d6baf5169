package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"golang.org/x/mod/semver"
)

// seeds are the testdata manifests and broken variants of them.
func seeds(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob("testdata/*.toml")
	if err != nil || len(files) == 0 {
		f.Fatalf("testdata/*.toml: %v", err)
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b, b[:len(b)/2], bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")),
			bytes.Replace(b, []byte("[[tools]]"), []byte("[[tools]]\n[tools.risk]\nx = 1\n[[tools]]"), 1))
	}
	return append(out,
		[]byte(`a."b.c" = 1`+"\n[x.'y']\nz = '''\nq'''\n"),
		[]byte("tools = [\n  { id = \"a.b\", # c\n    risk = { requires_approval = true } },\n]\n"),
		[]byte("\"\\u0074ools\" = [{id = \"\"\"x\n\"\"\"\"\"}]\n[[a.b]]\n[a.b.c]\n[[a.b]]\n"),
	)
}

// FuzzParse: Parse never panics, and what it accepts keeps the invariants
// its callers rely on.
func FuzzParse(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error %T, want *ParseError: %v", err, err)
			}
			return
		}
		checkManifest(t, m)
	})
}

func checkManifest(t *testing.T, m *Manifest) {
	t.Helper()
	if m.ManifestVersion != 1 || !idPattern.MatchString(m.SkillID) || !semver.IsValid("v"+m.Version) ||
		!publisherPattern.MatchString(m.Publisher) || len(m.Tools) == 0 || len(m.Tools) > maxTools {
		t.Fatalf("accepted %+v", m)
	}
	mods := m.Modules()
	for i := range m.Tools {
		tool := &m.Tools[i]
		if !idPattern.MatchString(tool.ID) || tool.ID != m.SkillID && !strings.HasPrefix(tool.ID, m.SkillID+".") ||
			m.Tool(tool.ID) != tool || tool.input == nil || !json.Valid(tool.InputSchema) {
			t.Fatalf("accepted tool %+v", tool)
		}
		if !modulePattern.MatchString(tool.Module) || !slices.Contains(mods, tool.Module) {
			t.Fatalf("module %q, modules %q", tool.Module, mods)
		}
		_ = tool.ValidateInput(json.RawMessage(`{}`))
	}
	c := m.Capabilities
	if c.HTTPEgressAllowlist == nil || c.Secrets == nil || c.StoragePrefixes == nil || c.Channels == nil ||
		len(c.FilesystemReadRoots)+len(c.FilesystemWriteRoots) > 0 || len(c.Wildcards()) > 0 && !c.WildcardOptIn {
		t.Fatalf("accepted capabilities %+v", c)
	}
}

// FuzzKeyLines: keyLines never panics, and on every document the TOML
// decoder accepts it finds a line, within the document, for every value
// the decoder found.
func FuzzKeyLines(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, tooDeep := keyLines(data)
		if tooDeep > 0 || len(data) > MaxSize {
			return // as Parse: the decoder is slow on deep nesting
		}
		var doc map[string]any
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return
		}
		last := bytes.Count(data, []byte("\n")) + 1
		walk(nil, doc, func(at path) {
			if n, ok := lines[at.id()]; !ok || n < 1 || n > last {
				t.Fatalf("%s: line %d, found %v (of %d lines)", at, n, ok, last)
			}
		})
	})
}

// walk calls visit with the path of every value under x, down to
// maxLineDepth.
func walk(at path, x any, visit func(path)) {
	if len(at) > maxLineDepth {
		return
	}
	if at != nil {
		visit(at)
	}
	switch x := x.(type) {
	case map[string]any:
		for k, e := range x {
			walk(at.key(k), e, visit)
		}
	case []map[string]any:
		for i, e := range x {
			walk(at.index(i), e, visit)
		}
	case []any:
		for i, e := range x {
			walk(at.index(i), e, visit)
		}
	}
}
