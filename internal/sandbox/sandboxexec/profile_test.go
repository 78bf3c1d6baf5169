package sandboxexec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/golden"
)

// buildPlan runs make with a toolchain outside the system directories.
var buildPlan = Plan{
	Program:     "/usr/bin/make",
	ProgramArgs: []string{"test"},
	Env:         []string{"LANG=C", "LC_ALL=C", "HOME=/Users/ci/ws/run-1"},
	Workspace:   "/Users/ci/ws/run-1",
	TempDir:     "/private/var/folders/zz/T/run-1",
	ReadOnly:    []string{"/Library/Developer/CommandLineTools"},
	Exec:        []string{"/bin/sh", "/Library/Developer/CommandLineTools/usr/bin/make"},
	Fork:        true,
}

// proxyPlan runs curl through the egress proxy.
var proxyPlan = Plan{
	Program:     "/usr/bin/curl",
	ProgramArgs: []string{"-sS", "https://example.com/"},
	Env:         []string{"HTTPS_PROXY=http://127.0.0.1:3128"},
	Workspace:   "/Users/ci/ws/run-2",
	Network:     true,
	ProxyPort:   3128,
}

func mustProfile(t *testing.T, p Plan) string {
	t.Helper()
	profile, err := p.Profile()
	if err != nil {
		t.Fatal(err)
	}
	return profile
}

func TestProfileGolden(t *testing.T) {
	golden.Compare(t, "profile_offline.golden", []byte(mustProfile(t, buildPlan)))
	golden.Compare(t, "profile_proxy.golden", []byte(mustProfile(t, proxyPlan)))
}

// skeleton returns profile with comments dropped and every string literal
// emptied, and the literals' values in order. It fails on an escape other
// than \\ and \", which the Scheme reader would read differently.
func skeleton(t *testing.T, profile string) (string, []string) {
	t.Helper()
	var sk strings.Builder
	var lits []string
	for i := 0; i < len(profile); i++ {
		switch c := profile[i]; c {
		case ';':
			for i < len(profile) && profile[i] != '\n' {
				i++
			}
			sk.WriteByte('\n')
		case '"':
			var lit strings.Builder
			for i++; i < len(profile) && profile[i] != '"'; i++ {
				if profile[i] == '\\' {
					i++
					if i == len(profile) || (profile[i] != '\\' && profile[i] != '"') {
						t.Fatalf("bad escape at %d in %q", i, profile)
					}
				}
				lit.WriteByte(profile[i])
			}
			if i == len(profile) {
				t.Fatalf("unterminated string literal in %q", profile)
			}
			lits = append(lits, lit.String())
			sk.WriteString(`""`)
		default:
			sk.WriteByte(c)
		}
	}
	return collapse(sk.String()), lits
}

// collapse replaces each run of identical lines with one: the number of
// filters in a rule (the ancestors of a path) depends on the paths.
func collapse(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(slices.Compact(lines), "\n")
}

// ruleText returns the rule that starts with head, through its closing
// parentheses.
func ruleText(t *testing.T, profile, head string) string {
	t.Helper()
	i := strings.Index(profile, head)
	if i < 0 {
		t.Fatalf("no %s in\n%s", head, profile)
	}
	r := profile[i:]
	return r[:strings.Index(r, "))\n")+2]
}

func TestHostilePathsStayLiterals(t *testing.T) {
	benign := buildPlan
	benign.Workspace = "/Users/ci/ws/plain"
	want, _ := skeleton(t, mustProfile(t, benign))
	for _, ws := range []string{
		`/Users/ci/ws/a"b`,
		`/Users/ci/ws/")) (allow file-read* (subpath "/")) ;`,
		`/Users/ci/ws/back\slash\`,
		`/Users/ci/ws/\"`,
		`/Users/ci/ws/paren(s) and (subpath "/")`,
		`/Users/ci/ws/semi;colon #|block|# #t`,
		"/Users/ci/ws/ünïcødé/日本語/🙂",
		"/Users/ci/ws/zero\u200bwidth\u202eright-to-left",
	} {
		p := benign
		p.Workspace = ws
		p.Dir = ws
		got, lits := skeleton(t, mustProfile(t, p))
		if got != want {
			t.Errorf("workspace %q changed the profile's structure:\n%s", ws, got)
		}
		if !slices.Contains(lits, ws) {
			t.Errorf("workspace %q is not among the literals %q", ws, lits)
		}
	}
}

func TestHostileExecutableAndReadOnly(t *testing.T) {
	p := proxyPlan
	want, _ := skeleton(t, mustProfile(t, p))
	p.Program = `/Applications/x")) (allow default) (("/bin/y`
	p.ReadOnly = nil
	got, lits := skeleton(t, mustProfile(t, p))
	if got != want {
		t.Errorf("program changed the profile's structure:\n%s", got)
	}
	if !slices.Contains(lits, p.Program) {
		t.Errorf("program is not among the literals %q", lits)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:    `"/a/b"`,
		`/a"b`:    `"/a\"b"`,
		`/a\b`:    `"/a\\b"`,
		`/a\"b`:   `"/a\\\"b"`,
		`/(a) ;b`: `"/(a) ;b"`,
		"/ü/日本/🙂": "\"/ü/日本/🙂\"",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRefusedPaths(t *testing.T) {
	for _, ws := range []string{
		"/Users/ci/ws\n(allow default)",
		"/Users/ci/ws\x00",
		"/Users/ci/ws\r",
		"/Users/ci/ws\tx",
		"/Users/ci/ws\x7f",
		"/Users/ci/ws\u0085",
		"/Users/ci/ws\xff",
		"ws",
		"./ws",
		"/Users/ci/../ws",
		"/Users/ci/ws/",
		"//Users/ci",
		"/",
	} {
		p := buildPlan
		p.Workspace, p.Dir = ws, ""
		if _, err := p.Profile(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("workspace %q: error = %v, want ErrInvalidPlan", ws, err)
		}
	}
}

func TestPlanValidation(t *testing.T) {
	ws := "/srv/ws"
	for _, c := range []struct {
		name, why string
		p         Plan
	}{
		{"no program", "empty program", Plan{Workspace: ws}},
		{"relative program", "clean absolute", Plan{Program: "make", Workspace: ws}},
		{"no workspace", "no workspace", Plan{Program: "/bin/ls"}},
		{"NUL argument", "argument 1 contains NUL", Plan{Program: "/bin/ls", Workspace: ws, ProgramArgs: []string{"a\x00b"}}},
		{"env without =", "not KEY=VALUE", Plan{Program: "/bin/ls", Workspace: ws, Env: []string{"PATH"}}},
		{"env without key", "not KEY=VALUE", Plan{Program: "/bin/ls", Workspace: ws, Env: []string{"=hunter2"}}},
		{"env with NUL", "contains NUL", Plan{Program: "/bin/ls", Workspace: ws, Env: []string{"A=hunter2\x00"}}},
		{"dir outside", "outside the workspace", Plan{Program: "/bin/ls", Workspace: ws, Dir: "/srv/wsx"}},
		{"relative dir", "clean absolute", Plan{Program: "/bin/ls", Workspace: ws, Dir: "ws"}},
		{"relative temp", "clean absolute", Plan{Program: "/bin/ls", Workspace: ws, TempDir: "tmp"}},
		{"root read-only", "root directory", Plan{Program: "/bin/ls", Workspace: ws, ReadOnly: []string{"/"}}},
		{"newline exec", "control character", Plan{Program: "/bin/ls", Workspace: ws, Exec: []string{"/bin/sh\n"}}},
		{"network no port", "proxy's port", Plan{Program: "/bin/ls", Workspace: ws, Network: true}},
		{"network port 65536", "proxy's port", Plan{Program: "/bin/ls", Workspace: ws, Network: true, ProxyPort: 65536}},
		{"port no network", "without network", Plan{Program: "/bin/ls", Workspace: ws, ProxyPort: 3128}},
		{"top-level workspace", "top-level", Plan{Program: "/bin/ls", Workspace: "/Users"}},
		{"workspace in /usr/lib", "overlaps", Plan{Program: "/bin/ls", Workspace: "/usr/lib/ws"}},
		{"workspace over the cryptex", "overlaps", Plan{Program: "/bin/ls", Workspace: "/System/Volumes"}},
		{"workspace over timezone", "overlaps", Plan{Program: "/bin/ls", Workspace: "/private/var"}},
		{"workspace over localtime", "overlaps", Plan{Program: "/bin/ls", Workspace: "/private/etc"}},
		{"workspace in ssl", "overlaps", Plan{Program: "/bin/ls", Workspace: "/private/etc/ssl/x"}},
		{"temp in /System/Library", "overlaps", Plan{Program: "/bin/ls", Workspace: ws, TempDir: "/System/Library/x"}},
		{"temp is /dev/null", "overlaps", Plan{Program: "/bin/ls", Workspace: ws, TempDir: "/dev/null"}},
	} {
		_, err := c.p.Profile()
		if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: Profile() error = %v, want ErrInvalidPlan for %q", c.name, err, c.why)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %q quotes an environment value", c.name, err)
		}
		if _, err := c.p.Argv(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: Argv() error = %v, want ErrInvalidPlan", c.name, err)
		}
	}
	ok := Plan{Program: "/bin/ls", Workspace: ws, Dir: ws + "/sub", TempDir: ws + "/tmp", Network: true, ProxyPort: 65535}
	if _, err := ok.Profile(); err != nil {
		t.Errorf("valid plan: %v", err)
	}
}

// outright returns the operations that allow rules grant without a
// filter, such as (allow process-fork).
func outright(t *testing.T, profile string) []string {
	sk, _ := skeleton(t, profile)
	var ops []string
	for _, line := range strings.Split(sk, "\n") {
		if op, ok := strings.CutPrefix(line, "(allow "); ok && strings.HasSuffix(op, ")") {
			ops = append(ops, strings.TrimSuffix(op, ")"))
		}
	}
	return ops
}

func TestNetwork(t *testing.T) {
	off := mustProfile(t, buildPlan)
	if strings.Contains(off, "(allow network") {
		t.Error("offline profile has a network rule")
	}
	for _, s := range []string{"remote", "trustd", "/private/etc/ssl"} {
		if strings.Contains(off, s) {
			t.Errorf("offline profile contains %q", s)
		}
	}
	on := mustProfile(t, proxyPlan)
	if got := strings.Count(on, "(allow network"); got != 1 {
		t.Errorf("proxy profile has %d network rules, want 1", got)
	}
	if !strings.Contains(on, "(allow network-outbound\n  (remote tcp \"localhost:3128\"))\n") {
		t.Errorf("proxy profile lacks the proxy rule:\n%s", on)
	}
	for _, s := range []string{"network-inbound", "network-bind", "network*", "unix-socket", "remote ip", `"*:`} {
		if strings.Contains(on, s) {
			t.Errorf("proxy profile contains %q", s)
		}
	}
}

func TestProcessRules(t *testing.T) {
	p := proxyPlan
	if got := outright(t, mustProfile(t, p)); len(got) != 0 {
		t.Errorf("profile allows %q outright", got)
	}
	p.Fork = true
	if got := outright(t, mustProfile(t, p)); !slices.Equal(got, []string{"process-fork"}) {
		t.Errorf("profile with Fork allows %q outright, want process-fork only", got)
	}
	exec := ruleText(t, mustProfile(t, buildPlan), "(allow process-exec")
	want := `(allow process-exec
  (literal "/Library/Developer/CommandLineTools/usr/bin/make")
  (literal "/bin/sh")
  (literal "/usr/bin/make"))`
	if exec != want {
		t.Errorf("process-exec rule:\n%s\nwant:\n%s", exec, want)
	}
}

func TestWritablePaths(t *testing.T) {
	profile := mustProfile(t, buildPlan)
	if got := strings.Count(profile, "file-write"); got != 2 {
		t.Fatalf("%d file-write rules, want the workspace's and /dev/null's:\n%s", got, profile)
	}
	want := `(allow file-read* file-write*
  (subpath "/Users/ci/ws/run-1")
  (subpath "/private/var/folders/zz/T/run-1"))`
	if got := ruleText(t, profile, "(allow file-read* file-write*"); got != want {
		t.Errorf("read-write rule:\n%s\nwant:\n%s", got, want)
	}
	if got, want := ruleText(t, profile, "(allow file-write-data"), "(allow file-write-data\n  (literal \"/dev/null\"))"; got != want {
		t.Errorf("write rule:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(profile, `(subpath "/")`) || strings.Contains(profile, `(subpath "/System")`) ||
		strings.Contains(profile, `(subpath "/Users")`) || strings.Contains(profile, `(subpath "/private")`) {
		t.Error("profile grants a tree that holds user data")
	}
}

func TestProfileDeterministic(t *testing.T) {
	first := mustProfile(t, buildPlan)
	for range 20 {
		if got := mustProfile(t, buildPlan); got != first {
			t.Fatal("the same plan rendered two profiles")
		}
	}
	shuffled := buildPlan
	shuffled.Exec = []string{buildPlan.Exec[1], buildPlan.Exec[0], buildPlan.Exec[1]}
	if got := mustProfile(t, shuffled); got != first {
		t.Error("the order or repetition of Exec changed the profile")
	}
	if got := mustProfile(t, buildPlan); got != first || buildPlan.Exec[0] != "/bin/sh" {
		t.Error("rendering changed the plan")
	}
}
