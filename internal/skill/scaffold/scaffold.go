// Package scaffold writes a new skill's directory (`execledger skill new`):
// a manifest, a module's source and a Makefile that builds and packages
// it, ready to package, install and run as written.
//
// Two languages: wat, a WASI command in WebAssembly text that echoes its
// input, shipped with its module already built (the bytes wat2wasm makes
// of it, checked by this package's tests), so that it packages with no
// toolchain; and go, a Go program for GOOS=wasip1 that the Makefile
// builds (it passes the audit as long as it opens no files: Go links
// WASI's path functions only then).
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

//go:embed templates
var templates embed.FS

// Languages are the languages Write knows.
var Languages = []string{"wat", "go"}

// idPattern is a skill id (the manifest's rule); Write checks it first so
// that its files are never named after a path.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+$`)

// params fill the templates.
type params struct {
	ID, Name, Publisher, Module, GoModule string
	Execledger                            string // the command the Makefile runs
}

func paramsFor(id string) params {
	parts := strings.Split(id, ".")
	module := strings.ReplaceAll(parts[len(parts)-1], "-", "_")
	name := strings.ToUpper(module[:1]) + module[1:]
	return params{ID: id, Name: name, Publisher: parts[0], Module: module,
		GoModule: "example.com/" + strings.Join(parts, "/"), Execledger: "execledger"}
}

// Publisher is the publisher Write puts in the manifest of skill id: its
// first segment.
func Publisher(id string) string { return strings.Split(id, ".")[0] }

// Options change what Write writes.
type Options struct {
	// Execledger is the execledger command the Makefile runs (default
	// "execledger", from PATH); skill new gives its own absolute path.
	Execledger string
}

// Write creates dir (which must not exist, or be empty) holding a new
// skill id in lang, and returns the files it wrote, relative to dir.
func Write(dir, id, lang string) ([]string, error) {
	return WriteWith(dir, id, lang, Options{})
}

// WriteWith is Write with options.
func WriteWith(dir, id, lang string, o Options) ([]string, error) {
	if !idPattern.MatchString(id) || len(id) > 128 {
		return nil, fmt.Errorf("scaffold: %q is not a skill id: dotted lower-case segments such as acme.hello", id)
	}
	root := "templates/" + lang
	if _, err := fs.Stat(templates, root); err != nil {
		return nil, fmt.Errorf("scaffold: unknown language %q (want %s)", lang, strings.Join(Languages, " or "))
	}
	if err := emptyDir(dir); err != nil {
		return nil, err
	}
	p := paramsFor(id)
	if o.Execledger != "" {
		if strings.ContainsAny(o.Execledger, " \t\n#$\"'\\") {
			return nil, fmt.Errorf("scaffold: the execledger path %q holds a character a Makefile cannot take as is", o.Execledger)
		}
		p.Execledger = o.Execledger
	}
	var written []string
	err := fs.WalkDir(templates, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := target(strings.TrimPrefix(name, root+"/"), p)
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(rel)), name, p); err != nil {
			return err
		}
		written = append(written, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "modules"), 0o755); err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	return written, nil
}

// target is where template file name goes in the skill's directory.
func target(name string, p params) string {
	switch name {
	case "skill.wasm":
		return "modules/" + p.Module + ".wasm"
	case "src/skill.wat":
		return "src/" + p.Module + ".wat"
	}
	return strings.TrimSuffix(name, ".tmpl")
}

// writeFile renders template file name (or copies it, for a module) to dst.
func writeFile(dst, name string, p params) error {
	raw, err := templates.ReadFile(name)
	if err != nil {
		return err
	}
	if path.Ext(name) != ".wasm" {
		t, err := template.New(name).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, p); err != nil {
			return err
		}
		raw = b.Bytes()
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, raw, 0o644)
}

// emptyDir creates dir, or accepts it when it exists and is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("scaffold: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("scaffold: %s exists and is not empty", dir)
	}
	return nil
}
