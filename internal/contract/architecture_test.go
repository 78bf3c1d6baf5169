package contract_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureMapIsCurrent: every path docs/architecture.md names
// (a file, a directory, a glob) exists, so that the map follows the house
// when a rule moves.
func TestArchitectureMapIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([^`\\s]+)`")
	n := 0
	for _, m := range code.FindAllStringSubmatch(string(b), -1) {
		p := m[1]
		if !strings.Contains(p, "/") || strings.Contains(p, ":") || strings.HasPrefix(p, "request") {
			continue // not a path: request:<id>, a command
		}
		n++
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(p, "…", "*"))))
		if err != nil || len(matches) == 0 {
			t.Errorf("docs/architecture.md names %s, which does not exist", p)
		}
	}
	if n < 20 {
		t.Errorf("docs/architecture.md names only %d paths: the map is missing", n)
	}
}
