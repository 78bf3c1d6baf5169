package sandboxexec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostPlan returns a valid plan over real, canonical files in a temporary
// directory.
func hostPlan(t *testing.T) Plan {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	tmp := filepath.Join(root, "tmp")
	prog := filepath.Join(root, "tool")
	for _, d := range []string{ws, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Plan{Program: prog, Workspace: ws, TempDir: tmp, ReadOnly: []string{root}}
}

func TestCheckPaths(t *testing.T) {
	p := hostPlan(t)
	if err := p.CheckPaths(); err != nil {
		t.Fatalf("valid plan: %v", err)
	}

	link := filepath.Join(filepath.Dir(p.Workspace), "link")
	if err := os.Symlink(p.Workspace, link); err != nil {
		t.Fatal(err)
	}
	q := p
	q.Workspace = link
	if err := q.CheckPaths(); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "not canonical") {
		t.Errorf("workspace through a link: %v, want not canonical", err)
	}

	q = p
	q.Exec = []string{filepath.Join(filepath.Dir(p.Program), "missing")}
	if err := q.CheckPaths(); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("missing executable: %v", err)
	}

	if err := os.Chmod(p.Program, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckPaths(); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("program without execute permission: %v", err)
	}
	if err := os.Chmod(p.Program, 0o755); err != nil {
		t.Fatal(err)
	}

	q = p
	q.TempDir = p.Program
	if err := q.CheckPaths(); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("temporary directory that is a file: %v", err)
	}
}
