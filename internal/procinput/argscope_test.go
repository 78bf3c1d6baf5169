package procinput

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestCheckArgScope(t *testing.T) {
	ws := newTestWorkspace(t)
	interpreters := func(p *Policy) { p.AllowInterpreters = true }
	inRoot := func(p string) string { return filepath.Join(ws.root, p) }
	type a = []string
	cases := []checkCase{
		{name: "plain words", in: Input{Command: "echo", Args: a{"hello", "world"}}},
		{name: "relative file", in: Input{Command: "cat", Args: a{"file.txt"}}},
		{name: "missing relative file (to be created)", in: Input{Command: "touch", Args: a{"sub/new.txt"}}},
		{name: "absolute inside", in: Input{Command: "cat", Args: a{inRoot("file.txt")}}},
		{name: "absolute outside", in: Input{Command: "cat", Args: a{"/etc/passwd"}}, want: ReasonPathEscape},
		{name: "missing absolute outside", in: Input{Command: "touch", Args: a{"/nonexistent/x"}}, want: ReasonPathEscape},
		{name: "dot-dot", in: Input{Command: "cat", Args: a{"../x"}}, want: ReasonPathTraversal},
		{name: "dot-dot inside", in: Input{Command: "cat", Args: a{"sub/../file.txt"}}, want: ReasonPathTraversal},
		{name: "dot-dot word passes", in: Input{Command: "git", Args: a{"log", "main..HEAD"}}},
		{name: "symlink escape to /etc", in: Input{Command: "cat", Args: a{"link-etc/passwd"}}, want: ReasonPathEscape},
		{name: "symlink escape, missing target below", in: Input{Command: "touch", Args: a{"link-etc/new-file"}}, want: ReasonPathEscape},
		{name: "symlink escape elsewhere", in: Input{Command: "ls", Args: a{"link-out"}}, want: ReasonPathEscape},
		{name: "dangling symlink refused", in: Input{Command: "touch", Args: a{"dangling"}}, want: ReasonPathUnresolvable},
		{name: "symlink inside passes", in: Input{Command: "ls", Args: a{"link-sub/deep"}}},
		{name: "file URL inside", in: Input{Command: "cat", Args: a{"file://" + inRoot("file.txt")}}},
		{name: "file URL outside", in: Input{Command: "cat", Args: a{"file:///etc/passwd"}}, want: ReasonPathEscape},
		{name: "file URL remote host", in: Input{Command: "cat", Args: a{"file://evil/etc/passwd"}}, want: ReasonFileURLInvalid},
		{name: "file URL escaped dot-dot", in: Input{Command: "cat", Args: a{"file://" + ws.root + "/%2e%2e/x"}}, want: ReasonPathTraversal},
		{name: "--opt=VALUE inside", in: Input{Command: "tool", Args: a{"--output=sub/out.txt"}}},
		{name: "--opt=VALUE outside", in: Input{Command: "tool", Args: a{"--output=/etc/x"}}, want: ReasonPathEscape},
		{name: "--opt=VALUE dot-dot", in: Input{Command: "tool", Args: a{"--output=../x"}}, want: ReasonPathTraversal},
		{name: "--opt=file URL", in: Input{Command: "tool", Args: a{"--in=file:///etc/x"}}, want: ReasonPathEscape},
		{name: "-Xval absolute outside (-C/etc)", in: Input{Command: "make", Args: a{"-C/etc"}}, want: ReasonPathEscape},
		{name: "-Xval relative dot-dot", in: Input{Command: "tar", Args: a{"-C../x", "-xf", "a.tar"}}, want: ReasonPathTraversal},
		{name: "-Xval inside", in: Input{Command: "make", Args: a{"-C./sub"}}},
		{name: "flag cluster is not a path", in: Input{Command: "ls", Args: a{"-la"}}},
		{name: "separate option value outside", in: Input{Command: "git", Args: a{"-C", "/etc", "status"}}, want: ReasonPathEscape},
		{name: "NAME=/abs outside (dd)", in: Input{Command: "dd", Args: a{"if=/etc/shadow", "of=out"}}, want: ReasonPathEscape},
		{name: "NAME=/abs inside", in: Input{Command: "dd", Args: a{"if=" + inRoot("file.txt"), "of=out"}}},
		{name: "-Dkey=/abs outside", in: Input{Command: "tool", Args: a{"-Dconf=/etc/x"}}, want: ReasonPathEscape},
		{name: "URL passes", in: Input{Command: "curl", Args: a{"https://example.com/a/b?x=1"}}},
		{name: "URL-looking traversal refused", in: Input{Command: "cat", Args: a{"https:/a/../../etc/passwd"}}, want: ReasonPathTraversal},
		{name: "scheme-like traversal refused", in: Input{Command: "cat", Args: a{"x:/../../etc/passwd"}}, want: ReasonPathTraversal},
		{name: "--grep pattern is not a path", in: Input{Command: "git", Args: a{"log", "--grep", "/etc/x"}}},
		{name: "--grep= pattern is not a path", in: Input{Command: "git", Args: a{"log", "--grep=/etc/x"}}},
		{name: "python -m value is a module, not a path", in: Input{Command: "python3", Args: a{"-m", "../x"}}, policy: interpreters},
		{name: "surrounding space trimmed too", in: Input{Command: "cat", Args: a{" /etc/passwd"}}, want: ReasonPathEscape},
		{name: "empty arg", in: Input{Command: "echo", Args: a{""}}},
		{name: "non-UTF-8 word", in: Input{Command: "echo", Args: a{"\xff\xfe"}}},
		{name: "4096-byte word", in: Input{Command: "echo", Args: a{string(make([]byte, 0)) + longWord(4096)}}},
	}
	runCheckCases(t, ws, cases)
}

func longWord(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'w'
	}
	return string(b)
}

// TestCheckNeverRewritesArgs: Palyra rewrote path-like arguments to
// absolute paths, corrupting arguments that were not paths (gap #6).
func TestCheckNeverRewritesArgs(t *testing.T) {
	ws := newTestWorkspace(t)
	args := []string{"file.txt", "./sub", "link-sub", "--out=sub/x", "-C./sub", "hello", "sub/..x", "a=b", "file://" + ws.root + "/file.txt"}
	plan, err := Check(&Input{Command: "tool", Args: args}, ws.policy())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.Args, args) {
		t.Fatalf("Args = %q, want %q unchanged", plan.Args, args)
	}
	plan.Args[0] = "changed"
	if args[0] != "file.txt" {
		t.Fatal("Plan.Args aliases the input")
	}
}
