package procinput

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckWorkingDirectory(t *testing.T) {
	ws := newTestWorkspace(t)
	cases := []struct {
		name    string
		cwd     string
		wantDir string // relative to the root, when accepted
		want    string
	}{
		{name: "default is the root", cwd: "", wantDir: "."},
		{name: "dot", cwd: ".", wantDir: "."},
		{name: "relative subdirectory", cwd: "sub/deep", wantDir: "sub/deep"},
		{name: "absolute inside", cwd: filepath.Join(ws.root, "sub"), wantDir: "sub"},
		{name: "symlink inside is canonicalised", cwd: "link-sub", wantDir: "sub"},
		{name: "dot-dot", cwd: "..", want: ReasonPathTraversal},
		{name: "dot-dot that would come back", cwd: "sub/../sub", want: ReasonPathTraversal},
		{name: "absolute outside", cwd: "/etc", want: ReasonPathEscape},
		{name: "symlink to /etc", cwd: "link-etc", want: ReasonPathEscape},
		{name: "symlink to another directory", cwd: "link-out", want: ReasonPathEscape},
		{name: "missing", cwd: "nope", want: ReasonCwdMissing},
		{name: "a file", cwd: "file.txt", want: ReasonCwdNotDirectory},
		{name: "NUL", cwd: "sub\x00", want: ReasonNULByte},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := Check(&Input{Command: "ls", Cwd: c.cwd}, ws.policy())
			if got := reasonOf(t, err); got != c.want {
				t.Fatalf("reason = %q, want %q (err: %v)", got, c.want, err)
			}
			if err == nil {
				if want := filepath.Join(ws.root, c.wantDir); plan.Dir != want {
					t.Fatalf("Dir = %q, want %q", plan.Dir, want)
				}
			}
		})
	}
}

func TestCheckWorkspaceRoot(t *testing.T) {
	ws := newTestWorkspace(t)
	link := filepath.Join(ws.outside, "root-link")
	must(t, os.Symlink(ws.root, link))
	cases := []struct {
		name string
		root string
		want string
	}{
		{name: "canonical root", root: ws.root},
		{name: "root through a symlink is canonicalised", root: link},
		{name: "missing root", root: filepath.Join(ws.root, "missing"), want: ReasonRootInvalid},
		{name: "root is a file", root: filepath.Join(ws.root, "file.txt"), want: ReasonRootInvalid},
		{name: "root is /", root: "/", want: ReasonRootInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ws.policy()
			p.WorkspaceRoot = c.root
			plan, err := Check(&Input{Command: "ls"}, p)
			if got := reasonOf(t, err); got != c.want {
				t.Fatalf("reason = %q, want %q (err: %v)", got, c.want, err)
			}
			if err == nil && plan.Root != ws.root {
				t.Fatalf("Root = %q, want %q", plan.Root, ws.root)
			}
		})
	}
}

func TestCheckInvalidPolicy(t *testing.T) {
	ws := newTestWorkspace(t)
	cases := []struct {
		name string
		edit func(*Policy)
	}{
		{name: "relative root", edit: func(p *Policy) { p.WorkspaceRoot = "ws" }},
		{name: "empty root", edit: func(p *Policy) { p.WorkspaceRoot = "" }},
		{name: "unknown egress mode", edit: func(p *Policy) { p.EgressMode = "open" }},
		{name: "relative PATH entry", edit: func(p *Policy) { p.Path = "bin:/usr/bin" }},
		{name: "PATH inside the workspace", edit: func(p *Policy) { p.Path = "/usr/bin:" + filepath.Join(ws.root, "sub") }},
		{name: "PATH through a symlink into the workspace", edit: func(p *Policy) { p.Path = filepath.Join(ws.root, "link-sub") }},
		{name: "bad allowlist entry", edit: func(p *Policy) { p.EgressAllowlist = []string{"exa mple.com"} }},
		{name: "numeric allowlist entry", edit: func(p *Policy) { p.EgressAllowlist = []string{"1"} }},
		{name: "allowlist entry for a whole TLD", edit: func(p *Policy) { p.EgressAllowlist = []string{"*.com"} }},
		{name: "zoned allowlist entry", edit: func(p *Policy) { p.EgressAllowlist = []string{"fe80::1%eth0"} }},
		{name: "path in executables", edit: func(p *Policy) { p.AllowedExecutables = []string{"/bin/ls"} }},
		{name: "negative limit", edit: func(p *Policy) { p.MaxArgs = -1 }},
		{name: "negative timeout", edit: func(p *Policy) { p.MaxTimeout = -1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ws.policy()
			c.edit(&p)
			_, err := Check(&Input{Command: "ls"}, p)
			if !errorsIsInvalidPolicy(err) {
				t.Fatalf("err = %v, want ErrInvalidPolicy", err)
			}
		})
	}
	if _, err := Check(&Input{Command: "ls"}, ws.policy()); err != nil {
		t.Fatalf("valid policy refused: %v", err)
	}
}
