//go:build linux

package bwrap

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/golden"
	"github.com/execledger/execledger/internal/sandbox/procinit"
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

// debianSkeleton is a Host for debianHost with its skeleton at a fixed
// path; probed is the Host a plan without one builds.
var (
	debianSkeleton = &Host{bwrap: "/usr/bin/bwrap", layout: debianHost, skel: "/tmp/execledger-bwrap-0/skel-0123", uid: Nobody, gid: Nobody}
	probed         = &Host{layout: debianHost}
)

// TestArgvGolden: the argv with a Host (tier C's) and without one.
func TestArgvGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		host   *Host
		// made are the memfds build makes, and info and block pipe ends.
		made []string
	}{
		{"argv.golden", debianSkeleton, []string{"seccomp", "info", "block"}},
		{"argv_probed.golden", probed, []string{"passwd", "group", "hosts", "seccomp", "info", "block"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			b := goldenArgv(t, tc.host, len(tc.made))
			golden.Compare(t, tc.golden, []byte(b))
			for _, bad := range []string{"--ro-bind / /", "/run/postgresql", "--bind / ", "--dev-bind / ", "--bind /dev ", "--ro-bind /dev ", "--dev-bind /dev "} {
				if strings.Contains(b, bad) {
					t.Errorf("argv contains %q", bad)
				}
			}
		})
	}
}

// goldenArgv builds the golden plan for h, one option with its operands
// per line, and checks it made made descriptor files.
func goldenArgv(t *testing.T, h *Host, made int) string {
	t.Helper()
	f, err := seccomp.BuildFor("amd64", seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := Plan{
		Program:       "/bin/sh",
		ProgramArgs:   []string{"-c", "echo hi"},
		Env:           []string{"LANG=C", "LC_ALL=C"},
		Workspace:     "/srv/ws/run-1",
		Dir:           "/workspace/src",
		ReadOnlyBinds: []string{"/opt/tools"},
		ProxySocket:   "/run/execledger/egress.sock",
		Seccomp:       f,
		Limits:        procinit.Limits{CPUSeconds: 2},
	}
	a, err := p.build(h, true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if len(a.files) != made || len(a.made) != made || a.info == nil || a.block == nil {
		t.Fatalf("got %d descriptor files, %d made, want %d", len(a.files), len(a.made), made)
	}
	var b strings.Builder
	for i, a := range a.args {
		if i > 0 && strings.HasPrefix(a, "--") {
			b.WriteByte('\n')
		} else if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	b.WriteByte('\n')
	return b.String()
}

// TestPassedDescriptorsLead: the plan's ExtraFiles keep descriptors 3, 4,
// ... and a ProgramFile follows them, executed through the sandbox's /proc.
func TestPassedDescriptorsLead(t *testing.T) {
	spec, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer spec.Close()
	p := Plan{Program: "init", ProgramFile: spec, ProgramArgs: []string{"__sandbox-init"},
		ExtraFiles: []*os.File{spec, spec}, Workspace: "/srv/ws"}
	a, err := p.build(probed, true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if len(a.files) != 6 || a.files[0] != spec || a.files[1] != spec || a.files[2] != spec || a.info != nil {
		t.Fatalf("files %v, info %v", a.files, a.info)
	}
	tail := strings.Join(a.args[len(a.args)-3:], " ")
	if tail != "-- /proc/self/fd/5 __sandbox-init" {
		t.Errorf("argv ends %q", tail)
	}
	if i := slices.Index(a.args, "--ro-bind-data"); i < 0 || a.args[i+1] != "6" {
		t.Errorf("bwrap's own descriptors do not follow the passed ones: %q", a.args)
	}
}

func TestPlanValidation(t *testing.T) {
	ok := Plan{Program: "true", Workspace: "/srv/ws"}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Plan{
		"no program":          {Workspace: "/srv/ws"},
		"no workspace":        {Program: "true"},
		"relative workspace":  {Program: "true", Workspace: "ws"},
		"unclean workspace":   {Program: "true", Workspace: "/srv/../root"},
		"root workspace":      {Program: "true", Workspace: "/"},
		"postgres socket":     {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/run/postgresql"}},
		"var run":             {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/var/run/postgresql"}},
		"parent of /var/run":  {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/var"}},
		"root home":           {Program: "true", Workspace: "/root/ws"},
		"shadow":              {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/etc/shadow"}},
		"env without =":       {Program: "true", Workspace: "/srv/ws", Env: []string{"PATH"}},
		"relative proxy":      {Program: "true", Workspace: "/srv/ws", ProxySocket: "egress.sock"},
		"dir outside":         {Program: "true", Workspace: "/srv/ws", Dir: "/tmp"},
		"dir unclean":         {Program: "true", Workspace: "/srv/ws", Dir: "/workspace/a/../../etc"},
		"dir prefix":          {Program: "true", Workspace: "/srv/ws", Dir: "/workspaces"},
		"host uid only":       {Program: "true", Workspace: "/srv/ws", HostUID: 65534},
		"nil extra file":      {Program: "true", Workspace: "/srv/ws", ExtraFiles: []*os.File{nil}},
		"other uid than host": {Program: "true", Workspace: "/srv/ws", UID: 1000, Host: debianSkeleton},
		"bind in host's /etc": {Program: "true", Workspace: "/srv/ws", ReadOnlyBinds: []string{"/etc/ssl"}, Host: debianSkeleton},
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

// TestEnforcementWithHost: the record lists the skeleton's binds and what
// they show, and needs no probe.
func TestEnforcementWithHost(t *testing.T) {
	e := Plan{Program: "true", Workspace: "/srv/ws", Host: debianSkeleton}.Enforcement()
	if _, ok := e["mounts_error"]; ok {
		t.Errorf("enforcement = %v", e)
	}
	ms := e["mounts"].([]Mount)
	skel := debianSkeleton.Dir()
	for _, want := range []Mount{
		{Kind: "ro-bind", Source: skel + "/etc", Dest: "/etc"},
		{Kind: "data", Source: skel + "/etc/passwd", Dest: "/etc/passwd", inSkeleton: true},
		{Kind: "ro-bind", Source: "/etc/ld.so.cache", Dest: "/etc/ld.so.cache"},
		{Kind: "ro-bind", Source: skel + "/dev", Dest: "/dev"},
		{Kind: "dev-bind", Source: "/dev/urandom", Dest: "/dev/urandom"},
		{Kind: "symlink", Source: "/proc/self/fd", Dest: "/dev/fd", inSkeleton: true},
		{Kind: "symlink", Source: "/tmp", Dest: "/dev/shm", inSkeleton: true},
	} {
		if !slices.Contains(ms, want) {
			t.Errorf("mounts lack %+v", want)
		}
	}
	for _, m := range ms {
		if m.Kind == "dev" || (m.Kind == "dev-bind" && !slices.Contains(devNodes, strings.TrimPrefix(m.Dest, "/dev/"))) {
			t.Errorf("mount %+v", m)
		}
	}
}
