package procinput

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheckPlanEnv(t *testing.T) {
	ws := newTestWorkspace(t)
	t.Setenv("SECRET_FROM_DAEMON", "hunter2")
	plan, err := Check(&Input{Command: "ls"}, ws.policy())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=" + DefaultPath, "LANG=C", "LC_ALL=C", "HOME=" + ws.root}
	if !slices.Equal(plan.Env, want) {
		t.Fatalf("Env = %q, want %q", plan.Env, want)
	}
	for _, kv := range os.Environ() {
		if slices.Contains(plan.Env, kv) && !strings.HasPrefix(kv, "LANG=") && !strings.HasPrefix(kv, "LC_ALL=") && !strings.HasPrefix(kv, "PATH=") {
			t.Errorf("daemon variable %q leaked into the plan", kv)
		}
	}

	git, err := Check(&Input{Command: "git", Args: []string{"status"}}, ws.policy())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_COUNT=6",
		"GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null"} {
		if !slices.Contains(git.Env, kv) {
			t.Errorf("git Env lacks %q: %q", kv, git.Env)
		}
	}
	if slices.Contains(plan.Env, "GIT_CONFIG_NOSYSTEM=1") {
		t.Error("non-git plan has git variables")
	}
}

func TestCheckPlanTimeout(t *testing.T) {
	ws := newTestWorkspace(t)
	cases := []struct {
		name string
		in   Input
		edit func(*Policy)
		want time.Duration
		bg   string
	}{
		{name: "default", in: Input{Command: "ls"}, want: 30 * time.Second},
		{name: "shorter timeout_ms", in: Input{Command: "ls", TimeoutMS: ptr[int64](1500)}, want: 1500 * time.Millisecond},
		{name: "longer timeout_ms capped", in: Input{Command: "ls", TimeoutMS: ptr[int64](60_000)}, want: 30 * time.Second},
		{name: "huge timeout_ms capped without overflow", in: Input{Command: "ls", TimeoutMS: ptr[int64](1 << 62)}, want: 30 * time.Second},
		{name: "policy max lower than default", in: Input{Command: "ls"}, edit: func(p *Policy) { p.MaxTimeout = time.Second }, want: time.Second},
		{name: "policy max higher", in: Input{Command: "ls", TimeoutMS: ptr[int64](60_000)}, edit: func(p *Policy) { p.MaxTimeout = time.Hour }, want: time.Minute},
		{name: "background default lifetime", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundRunOwned}},
			want: 10 * time.Minute, bg: BackgroundRunOwned},
		{name: "background lifetime from timeout_ms", in: Input{Command: "sleep", TimeoutMS: ptr[int64](120_000), Background: &Background{Mode: BackgroundRunOwned}},
			want: 2 * time.Minute, bg: BackgroundRunOwned},
		{name: "background lifetime_ms", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundRunOwned, LifetimeMS: ptr[int64](5000)}},
			want: 5 * time.Second, bg: BackgroundRunOwned},
		{name: "background lifetime capped", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundRunOwned, LifetimeMS: ptr[int64](3_600_000)}},
			want: 30 * time.Minute, bg: BackgroundRunOwned},
		{name: "detached allowed", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundDetached}},
			edit: func(p *Policy) { p.AllowDetached = true }, want: 10 * time.Minute, bg: BackgroundDetached},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ws.policy()
			if c.edit != nil {
				c.edit(&p)
			}
			plan, err := Check(&c.in, p)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Timeout != c.want || plan.Background != c.bg {
				t.Fatalf("Timeout, Background = %s, %q; want %s, %q", plan.Timeout, plan.Background, c.want, c.bg)
			}
		})
	}
}

func TestCheckBackgroundCapability(t *testing.T) {
	ws := newTestWorkspace(t)
	runCheckCases(t, ws, []checkCase{
		{name: "run_owned needs nothing", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundRunOwned}}},
		{name: "detached needs AllowDetached", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundDetached}}, want: ReasonDetachedDenied},
	})
}

func TestCheckNilInput(t *testing.T) {
	ws := newTestWorkspace(t)
	if _, err := Check(nil, ws.policy()); reasonOf(t, err) != ReasonInputMalformed {
		t.Fatalf("Check(nil) = %v", err)
	}
}

// TestCheckOrder: a request breaking several rules gets the earliest
// refusal in Palyra's order.
func TestCheckOrder(t *testing.T) {
	ws := newTestWorkspace(t)
	only := func(p *Policy) { p.AllowedExecutables = []string{"cat", "bash"} }
	runCheckCases(t, ws, []checkCase{
		{name: "shape before allowlist", in: Input{Command: "rm -rf", Args: []string{"/"}}, policy: only, want: ReasonCommandWhitespace},
		{name: "allowlist before workspace", in: Input{Command: "rm", Cwd: "/etc"}, policy: only, want: ReasonExecutableNotAllowlisted},
		{name: "interpreter before workspace", in: Input{Command: "bash", Cwd: "/etc"}, policy: only, want: ReasonInterpreterDenied},
		{name: "cwd before args", in: Input{Command: "cat", Cwd: "/etc", Args: []string{"../x"}}, policy: only, want: ReasonPathEscape},
		{name: "args before egress", in: Input{Command: "cat", Args: []string{"../x", "https://evil.test/"}}, policy: only, want: ReasonPathTraversal},
	})
}

func TestErrorKinds(t *testing.T) {
	ws := newTestWorkspace(t)
	cases := []struct {
		in   Input
		kind error
	}{
		{Input{Command: ""}, ErrInvalidInput},
		{Input{Command: "bash"}, ErrCapabilityDenied},
		{Input{Command: "cat", Args: []string{"/etc/passwd"}}, ErrWorkspaceScopeDenied},
		{Input{Command: "curl", Args: []string{"https://evil.test"}}, ErrEgressDenied},
	}
	for _, c := range cases {
		_, err := Check(&c.in, ws.policy())
		if !errorsIs(err, c.kind) {
			t.Errorf("Check(%q %q) = %v, want kind %v", c.in.Command, c.in.Args, err, c.kind)
		}
		for _, other := range []error{ErrInvalidInput, ErrCapabilityDenied, ErrWorkspaceScopeDenied, ErrEgressDenied} {
			if other != c.kind && errorsIs(err, other) {
				t.Errorf("Check(%q) error also matches %v", c.in.Command, other)
			}
		}
	}
}
