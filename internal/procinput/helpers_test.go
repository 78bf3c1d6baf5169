package procinput

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testWorkspace is a workspace with:
//
//	sub/deep/         directories
//	file.txt          a regular file
//	link-sub -> sub   a symlink staying inside
//	link-etc -> /etc  a symlink escaping
//	link-out -> <a directory outside the workspace>
//	dangling -> <a missing file outside the workspace>
type testWorkspace struct {
	root    string // canonical
	outside string // canonical, not inside root
}

func newTestWorkspace(t testing.TB) testWorkspace {
	t.Helper()
	root := canonical(t, t.TempDir())
	outside := canonical(t, t.TempDir())
	must(t, os.MkdirAll(filepath.Join(root, "sub", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "file.txt"), []byte("x"), 0o644))
	must(t, os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "link-sub")))
	must(t, os.Symlink("/etc", filepath.Join(root, "link-etc")))
	must(t, os.Symlink(outside, filepath.Join(root, "link-out")))
	must(t, os.Symlink(filepath.Join(outside, "missing"), filepath.Join(root, "dangling")))
	return testWorkspace{root: root, outside: outside}
}

func canonical(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	must(t, err)
	return c
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// policy allows any non-interpreter program in ws with preflight egress.
func (ws testWorkspace) policy() Policy {
	return Policy{
		AllowedExecutables: []string{"*"},
		EgressMode:         EgressPreflight,
		EgressAllowlist:    []string{"corp.local", "example.com", "10.0.0.1", "::1"},
		WorkspaceRoot:      ws.root,
	}
}

// reasonOf returns err's Reason, "" for nil, or fails for a non-*Error.
func reasonOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	return e.Reason
}

func ptr[T any](v T) *T { return &v }

// checkCase is a table entry run through Check.
type checkCase struct {
	name   string
	in     Input
	policy func(*Policy) // optional edit of ws.policy()
	want   string        // Reason, "" for accepted
}

func runCheckCases(t *testing.T, ws testWorkspace, cases []checkCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ws.policy()
			if c.policy != nil {
				c.policy(&p)
			}
			in := c.in
			plan, err := Check(&in, p)
			if got := reasonOf(t, err); got != c.want {
				t.Fatalf("Check(%q %q) reason = %q, want %q (err: %v)", in.Command, in.Args, got, c.want, err)
			}
			if err == nil && plan == nil {
				t.Fatal("nil plan without error")
			}
		})
	}
}

func errorsIsInvalidPolicy(err error) bool { return errors.Is(err, ErrInvalidPolicy) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
