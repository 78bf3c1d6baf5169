package sandboxexec

import (
	"errors"
	"slices"
	"testing"
)

func TestArgv(t *testing.T) {
	p := buildPlan
	p.ProgramArgs = []string{"-f", "--", "-p", "(allow default)", ""}
	argv, err := p.Argv()
	if err != nil {
		t.Fatal(err)
	}
	profile := mustProfile(t, p)
	want := []string{Path, "-p", profile, "--", "/usr/bin/make", "-f", "--", "-p", "(allow default)", ""}
	if !slices.Equal(argv, want) {
		t.Errorf("argv = %q\nwant %q", argv, want)
	}
}

func TestEnviron(t *testing.T) {
	env, err := Plan{Program: "/bin/ls", Workspace: "/srv/ws", TempDir: "/tmp/x", Env: []string{"LANG=C"}}.Environ()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"PATH=" + DefaultPath, "LANG=C", "TMPDIR=/tmp/x"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	own := []string{"TMPDIR=/ws/t", "PATH=/ws/bin"}
	env, err = Plan{Program: "/bin/ls", Workspace: "/srv/ws", TempDir: "/tmp/x", Env: own}.Environ()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(env, own) {
		t.Errorf("env = %q, want the plan's own %q", env, own)
	}
	if _, err := (Plan{Program: "/bin/ls", Workspace: "/srv/ws", Env: []string{"NOVALUE"}}).Environ(); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("Environ() error = %v, want ErrInvalidPlan", err)
	}
}
