package bwrap

import (
	"errors"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/golden"
	"github.com/execledger/execledger/internal/seccomp"
)

// debianHost is a merged-/usr Debian 12 amd64 root, so the golden argv does
// not depend on the machine running the test.
var debianHost = hostLayout{
	roots: []rootDir{
		{path: "/bin", symlink: "usr/bin"},
		{path: "/sbin", symlink: "usr/sbin"},
		{path: "/lib", symlink: "usr/lib"},
		{path: "/lib64", symlink: "usr/lib64"},
	},
	etc: []string{"/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/certs/ca-certificates.crt"},
}

func TestArgvGolden(t *testing.T) {
	f, err := seccomp.BuildFor("amd64", seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := Plan{
		Program:       "/bin/sh",
		ProgramArgs:   []string{"-c", "echo hi"},
		Env:           []string{"LANG=C", "LC_ALL=C"},
		Workspace:     "/srv/ws/run-1",
		ReadOnlyBinds: []string{"/opt/tools"},
		ProxySocket:   "/run/execledger/egress.sock",
		Seccomp:       f,
	}
	args, files, err := p.build(debianHost)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(files)
	if len(files) != 4 {
		t.Fatalf("got %d descriptor files, want passwd, group, hosts and seccomp", len(files))
	}
	var b strings.Builder
	for i, a := range args {
		// One option with its operands per line, for readable diffs.
		if i > 0 && strings.HasPrefix(a, "--") {
			b.WriteByte('\n')
		} else if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	b.WriteByte('\n')
	golden.Compare(t, "argv.golden", []byte(b.String()))
	for _, bad := range []string{"--ro-bind / /", "/run/postgresql", "--bind / "} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("argv contains %q", bad)
		}
	}
}

func TestPlanValidation(t *testing.T) {
	ok := Plan{Program: "true", Workspace: "/srv/ws"}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Plan{
		"no program":         {Workspace: "/srv/ws"},
		"no workspace":       {Program: "true"},
		"relative workspace": {Program: "true", Workspace: "ws"},
		"unclean workspace":  {Program: "true", Workspace: "/srv/../root"},
		"root workspace":     {Program: "true", Workspace: "/"},
		"postgres socket":    {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/run/postgresql"}},
		"var run":            {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/var/run/postgresql"}},
		"parent of /var/run": {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/var"}},
		"root home":          {Program: "true", Workspace: "/root/ws"},
		"shadow":             {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/etc/shadow"}},
		"env without =":      {Program: "true", Workspace: "/srv/ws", Env: []string{"PATH"}},
		"relative proxy":     {Program: "true", Workspace: "/srv/ws", ProxySocket: "egress.sock"},
	}
	for name, p := range bad {
		if _, _, err := p.Args(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: Args() error = %v, want ErrInvalidPlan", name, err)
		}
	}
}

func TestEnforcement(t *testing.T) {
	f, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := Plan{Program: "true", Workspace: "/srv/ws", Env: []string{"SECRET=hunter2"}, Seccomp: f}.Enforcement()
	if ns := e["namespaces"].([]string); len(ns) != 7 || ns[6] != "net" {
		t.Errorf("namespaces = %v", ns)
	}
	if env := e["env"].([]string); strings.Join(env, ",") != "PATH,SECRET" {
		t.Errorf("env = %v", env)
	}
	sc := e["seccomp"].(map[string]any)
	if rules := sc["rules"].([]seccomp.Rule); len(rules) == 0 {
		t.Error("no seccomp rules")
	}
	if e["cap_drop"] != "ALL" || e["uid"] != uint32(Nobody) {
		t.Errorf("enforcement = %v", e)
	}
}
