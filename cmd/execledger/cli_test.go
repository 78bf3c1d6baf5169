package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/bench"
)

// commandPaths lists every command of the tree but cobra's hidden ones,
// as the words that name it ("skill trust add").
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	root := newRootCmd(&env{io: &stdio{}})
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	return paths
}

// TestHelp: help goes to stdout with exit 0, however it is asked for, in
// the same form for every command, each with a summary and an example.
func TestHelp(t *testing.T) {
	t.Parallel()
	paths := commandPaths(t)
	if len(paths) < 30 {
		t.Fatalf("%d commands: %v", len(paths), paths)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := execute(t, nil, "", args...)
		if r.code != exitOK || r.stderr != "" || !strings.Contains(r.stdout, "Usage:\n  execledger COMMAND") ||
			!strings.Contains(r.stdout, "Exit codes:") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		for _, args := range [][]string{append(append([]string{}, p...), "--help"), append([]string{"help"}, p...)} {
			r := execute(t, nil, "", args...)
			if r.code != exitOK || r.stderr != "" {
				t.Errorf("%v: %+v", args, r)
				continue
			}
			for _, want := range []string{"Usage:\n  execledger " + name, "Examples:\n", "  execledger " + name, "-h, --help"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%v: no %q in\n%s", args, want, r.stdout)
				}
			}
		}
	}
}

// TestUsageErrors: a wrong command line is exit 2, on stderr, saying what
// is wrong and then the usage line; an unknown command gets a suggestion.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"execledger: missing command", "usage: execledger COMMAND"}},
		{[]string{"skil"}, []string{`unknown command "skil" for "execledger"`, "Did you mean this?\n\tskill"}},
		{[]string{"skill"}, []string{"skill: missing command (one of ", "usage: execledger skill COMMAND"}},
		{[]string{"skill", "trust", "ad"}, []string{`unknown command "ad" for "execledger skill trust"`, "\tadd"}},
		{[]string{"status"}, []string{"status wants ID; got no arguments", "usage: execledger status ID [flags]"}},
		{[]string{"status", "a", "b"}, []string{`status wants ID; got "a" "b"`}},
		{[]string{"skill", "trust", "add", "acme"}, []string{"skill trust add wants PUBLISHER PUBKEY_FILE", "usage: execledger skill trust add PUBLISHER PUBKEY_FILE"}},
		{[]string{"migrate", "--frobnicate"}, []string{"unknown flag: --frobnicate", "usage: execledger migrate [flags]"}},
		{[]string{"submit", "--timeout", "soon", "echo", "{}"}, []string{`invalid argument "soon" for "--timeout"`}},
		{[]string{"keygen", "--note", "--witness"}, []string{"--note and --witness are different keys"}},
		{[]string{"help", "frobnicate"}, []string{`unknown help topic "frobnicate"`}},
		{[]string{"version", "extra"}, []string{`version takes no arguments; got "extra"`}},
		{[]string{"completion", "tcsh"}, []string{`unknown command "tcsh" for "execledger completion"`}},
	} {
		r := execute(t, nil, "", tc.args...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("%v: %+v", tc.args, r)
			continue
		}
		if !strings.HasPrefix(r.stderr, "execledger: ") || !strings.Contains(r.stderr, "\nusage: execledger") {
			t.Errorf("%v: stderr %q", tc.args, r.stderr)
		}
		for _, want := range tc.want {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr %q, want %q", tc.args, r.stderr, want)
			}
		}
	}
}

// TestJSONErrors: with --json, wherever it stands, an error is one JSON
// object on stderr, of the kind its exit code is; the exit code is the same.
func TestJSONErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		environ []string
		args    []string
		code    int
		kind    string
		msg     string
	}{
		{nil, []string{"--json", "frobnicate"}, exitUsage, "usage", `unknown command "frobnicate"`},
		{nil, []string{"frobnicate", "--json"}, exitUsage, "usage", `unknown command "frobnicate"`},
		{nil, []string{"migrate", "--frobnicate", "--json"}, exitUsage, "usage", "unknown flag: --frobnicate"},
		{nil, []string{"--json", "status"}, exitUsage, "usage", "status wants ID"},
		{nil, []string{"status", "nope", "--json"}, exitUsage, "usage", "not a request id"},
		{nil, []string{"migrate", "--json"}, exitError, "error", "no database"},
		{nil, []string{"--json", "status", uuid.NewString()}, exitError, "error", "no database"},
		{[]string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, []string{"skill", "list", "--json"}, exitError, "error", "connect to"},
	} {
		r := execute(t, tc.environ, "", tc.args...)
		var got jsonError
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != tc.code || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &got) != nil {
			t.Errorf("%v: %+v", tc.args, r)
			continue
		}
		e := got.Error
		if e.ExitCode != tc.code || e.Kind != tc.kind || !strings.Contains(e.Message, tc.msg) || (e.Usage != "") != (tc.code == exitUsage) {
			t.Errorf("%v: %+v", tc.args, e)
		}
	}
	// Without --json, the same failure is text.
	if r := execute(t, nil, "", "migrate"); r.code != exitError || !strings.HasPrefix(r.stderr, "execledger: no database") {
		t.Errorf("migrate: %+v", r)
	}
	// Every exit code but 0 has a kind.
	for code := exitError; code <= exitNotFailed; code++ {
		if exitKinds[code] == "" {
			t.Errorf("exit code %d has no kind", code)
		}
	}
}

// TestPlainErrors: an error a command returns that is not made by fail
// is a failure (exit 1), not a usage error.
func TestPlainErrors(t *testing.T) {
	t.Parallel()
	var errb strings.Builder
	e := &env{io: &stdio{in: strings.NewReader(""), out: &strings.Builder{}, err: &errb}}
	root := newRootCmd(e)
	root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { return errors.New("boom") }})
	e.finishTree(root)
	root.SetArgs([]string{"boom"})
	cmd, err := root.ExecuteC()
	if code := printError(&errb, cmd, err, false); code != exitError || errb.String() != "execledger: boom\n" {
		t.Errorf("code %d, stderr %q", code, errb.String())
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		r := execute(t, nil, "", args...)
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "execledger ") || !strings.Contains(r.stdout, "go:        "+runtime.Version()) {
			t.Errorf("%v: %+v", args, r)
		}
	}
	r := execute(t, nil, "", "version", "--json")
	var v versionInfo
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Go != runtime.Version() ||
		v.Module != "github.com/execledger/execledger" || v.Version == "" {
		t.Errorf("version --json: %+v", r)
	}
}

// TestCompletion: cobra's completion scripts, and the completions they ask
// the binary for: commands, subcommands and flag values.
func TestCompletion(t *testing.T) {
	t.Parallel()
	r := execute(t, nil, "", "completion", "bash")
	if r.code != exitOK || !strings.Contains(r.stdout, "bash completion V2 for execledger") ||
		!strings.Contains(r.stdout, "__start_execledger") || !strings.Contains(r.stdout, "__complete") {
		t.Fatalf("completion bash: code %d, stderr %q, %d bytes", r.code, r.stderr, len(r.stdout))
	}
	for _, sh := range []string{"zsh", "fish", "powershell"} {
		if r := execute(t, nil, "", "completion", sh); r.code != exitOK || !strings.Contains(r.stdout, "execledger") {
			t.Errorf("completion %s: code %d, stderr %q", sh, r.code, r.stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"submit", "skill", "projector", "verify", "version", "completion"}},
		{[]string{"skill", ""}, []string{"install", "approve", "trust"}},
		{[]string{"skill", "trust", ""}, []string{"add", "revoke", "list"}},
		{[]string{"bench", "--system", ""}, []string{"execledger", "river", "river-audited", "both", "all"}},
		{[]string{"bench", "--mode", ""}, []string{"burndown", "continuous"}},
		{[]string{"skill", "new", "x", "--lang", ""}, []string{"wat", "go"}},
		{[]string{"help", "projector", ""}, []string{"status", "retry", "rebuild", "verify"}},
	} {
		r := execute(t, nil, "", append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		for _, want := range tc.want {
			if r.code != exitOK || !strings.Contains(r.stdout, "\n"+want) && !strings.HasPrefix(r.stdout, want) {
				t.Errorf("complete %q: %+v, want %q", tc.args, r, want)
			}
		}
	}
}

// TestBenchUsage: a bad --system or --audit-chains is a usage error that
// says what is wanted, before any database is touched.
func TestBenchUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system", "sidekiq"}, "river-audited"},
		{[]string{"--system", "execledger,"}, "comma-separated"},
		{[]string{"--system", "execledger", "--audit-chains", "-1"}, "audit chains -1"},
	} {
		r := execute(t, []string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x"}, "", append([]string{"bench"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("bench %q: %+v, want usage error with %q", tc.args, r, tc.want)
		}
	}
}

// TestRiverBuildTag: River is linked only with -tags river; the default
// build has none of it, and refuses every system but execledger.
func TestRiverBuildTag(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "riverqueue") {
		t.Errorf("the default build links River:\n%s", out)
	}
	if out, err := exec.Command(goTool, "vet", "-tags", "river", ".").CombinedOutput(); err != nil {
		t.Errorf("go vet -tags river: %v\n%s", err, out)
	}
	if bench.RiverLinked { // go test -tags river
		return
	}
	for _, sys := range []string{"river", "river-audited", "both", "all", "execledger,river-audited"} {
		r := execute(t, []string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x"}, "", "bench", "--system", sys)
		if r.code != exitUsage || !strings.Contains(r.stderr, "-tags river") {
			t.Errorf("bench --system %s: %+v", sys, r)
		}
	}
}
