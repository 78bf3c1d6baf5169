package policy

import (
	"path/filepath"
	"testing"
)

// testdataFiles are the example policies, in load order.
var testdataFiles = []string{"allow_echo.cedar", "baseline.cedar", "process.cedar", "skills.cedar", "erroring.cedar"}

func testdataPaths() []string {
	paths := make([]string, len(testdataFiles))
	for i, f := range testdataFiles {
		paths[i] = filepath.Join("..", "..", "testdata", "policies", f)
	}
	return paths
}

// loadTestdata loads every example policy file.
func loadTestdata(t testing.TB) *Engine {
	t.Helper()
	e, err := Load(testdataPaths()...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return e
}

// mustSources builds an engine from name/text pairs.
func mustSources(t testing.TB, nameText ...string) *Engine {
	t.Helper()
	e, err := FromSources(sources(nameText...))
	if err != nil {
		t.Fatalf("FromSources: %v", err)
	}
	return e
}

func sources(nameText ...string) []Source {
	var out []Source
	for i := 0; i+1 < len(nameText); i += 2 {
		out = append(out, Source{Name: nameText[i], Text: []byte(nameText[i+1])})
	}
	return out
}
