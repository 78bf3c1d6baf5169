package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
)

// Definition is one definition file: a function (or a function's
// overloads) with its SET clauses, COMMENT, grants and triggers, a view, or
// a table's row-security policies. Its text is what the database holds
// once it is applied, so applying it again changes nothing.
type Definition struct {
	Name    string   // path under migrations/, e.g. "api/submit.sql"
	SQL     string   // the file's text, run as one multi-statement Exec
	Depends []string // the definitions it declares it needs to exist first
	SHA256  string   // hex SHA-256 of SQL
}

// dependsLine is the declaration of one dependency, in the comment lines
// that open a definition file.
var dependsLine = regexp.MustCompile(`^--\s*depends:\s*(\S+)\s*$`)

// loadDefinitions reads every .sql file under the role folders of fsys and
// returns them in dependency order: each after those it declares, ties
// broken by name. An unknown dependency or a cycle is an error naming it.
func loadDefinitions(fsys fs.FS) ([]Definition, error) {
	byName := map[string]*Definition{}
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".sql") {
			return nil
		}
		if !strings.Contains(p, "/") {
			return fmt.Errorf("definition %s: a definition file lives in a role folder (api/, executor/, …)", p)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		def, err := parseDefinition(p, string(b))
		if err != nil {
			return err
		}
		byName[p] = def
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	for _, n := range names {
		for _, d := range byName[n].Depends {
			if _, ok := byName[d]; !ok {
				return nil, fmt.Errorf("migrations: definition %s depends on %s, which is no definition file", n, d)
			}
		}
	}
	order, err := dependencyOrder(byName, names)
	if err != nil {
		return nil, err
	}
	out := make([]Definition, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, nil
}

// parseDefinition reads the `-- depends:` lines of the comment block that
// opens the file.
func parseDefinition(name, text string) (*Definition, error) {
	sum := sha256.Sum256([]byte(text))
	def := &Definition{Name: name, SQL: text, SHA256: hex.EncodeToString(sum[:])}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "--") {
			break
		}
		m := dependsLine.FindStringSubmatch(line)
		if m == nil {
			if strings.Contains(strings.ToLower(line), "depends:") {
				return nil, fmt.Errorf("definition %s: malformed dependency line %q (want `-- depends: folder/name.sql`)", name, line)
			}
			continue
		}
		switch {
		case m[1] == name:
			return nil, fmt.Errorf("definition %s depends on itself", name)
		case slices.Contains(def.Depends, m[1]):
			return nil, fmt.Errorf("definition %s declares %s twice", name, m[1])
		}
		def.Depends = append(def.Depends, m[1])
	}
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("definition %s is empty", name)
	}
	return def, nil
}

// dependencyOrder sorts names so that each comes after its dependencies,
// choosing the smallest name among those ready, so the order is stable.
func dependencyOrder(defs map[string]*Definition, names []string) ([]string, error) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[string]int, len(names))
	order := make([]string, 0, len(names))
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch state[n] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, n)
			return fmt.Errorf("migrations: definitions depend on each other in a cycle: %s", strings.Join(append(path[i:], n), " -> "))
		}
		state[n] = visiting
		deps := slices.Clone(defs[n].Depends)
		slices.Sort(deps)
		for _, d := range deps {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		state[n] = done
		order = append(order, n)
		return nil
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, n := range sorted {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}
