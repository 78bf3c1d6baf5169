//go:build darwin

package sandboxexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// probeEnv names the address the test binary dials when it runs as the
// sandboxed program.
const probeEnv = "SANDBOXEXEC_TEST_DIAL"

func TestMain(m *testing.M) {
	if target := os.Getenv(probeEnv); target != "" {
		c, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			fmt.Printf("dial %s: failed: %v\n", target, err)
			os.Exit(0)
		}
		c.Close()
		fmt.Printf("dial %s: connected\n", target)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// requireSandboxExec fails the test when sandbox-exec is missing.
func requireSandboxExec(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Fatalf("sandbox-exec is required on macOS: %v", err)
	}
}

// canonical returns a new canonical temporary directory.
func canonical(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// bashPlan runs script under /bin/bash in a fresh workspace.
func bashPlan(t *testing.T, script string) Plan {
	t.Helper()
	requireSandboxExec(t)
	return Plan{Program: "/bin/bash", ProgramArgs: []string{"-c", script}, Workspace: canonical(t)}
}

// run runs p and returns its combined output and Run's error.
func run(t *testing.T, p Plan) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := p.Run(ctx, &out, &out)
	return out.String(), err
}

func TestRunEcho(t *testing.T) {
	p := bashPlan(t, `echo "hello $GREETING"`)
	p.Env = []string{"GREETING=world"}
	out, err := run(t, p)
	if err != nil || out != "hello world\n" {
		t.Fatalf("output %q, error %v", out, err)
	}
}

func TestFilesOutsideTheWorkspace(t *testing.T) {
	other := canonical(t)
	secret := filepath.Join(other, "secret")
	if err := os.WriteFile(secret, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := bashPlan(t, `echo ok > inside
if echo x > "$OTHER/outside" 2>/dev/null; then echo WROTE-OUTSIDE; fi
if read l < "$SECRET" 2>/dev/null; then echo "READ-SECRET $l"; fi
if echo x > /private/tmp/sandboxexec-test-$$ 2>/dev/null; then echo WROTE-TMP; fi
echo done`)
	p.Env = []string{"OTHER=" + other, "SECRET=" + secret}
	out, err := run(t, p)
	if err != nil || out != "done\n" {
		t.Fatalf("output %q, error %v", out, err)
	}
	if data, err := os.ReadFile(filepath.Join(p.Workspace, "inside")); err != nil || string(data) != "ok\n" {
		t.Errorf("workspace file: %q, %v", data, err)
	}
}

func TestExecAndFork(t *testing.T) {
	// exec replaces bash without forking: only the exec rule decides.
	out, err := run(t, bashPlan(t, `exec /bin/ls /`))
	if err == nil || strings.Contains(out, "Users") {
		t.Errorf("executing an unlisted program: output %q, error %v", out, err)
	}
	p := bashPlan(t, `/bin/ls "$PWD"; echo status $?`)
	p.Exec = []string{"/bin/ls"}
	if out, err := run(t, p); err != nil || strings.Contains(out, "status 0") {
		t.Errorf("forking without Fork: output %q, error %v", out, err)
	}
	p.Fork = true
	if out, err := run(t, p); err != nil || !strings.Contains(out, "status 0") {
		t.Errorf("listed program with Fork: output %q, error %v", out, err)
	}
}

// probePlan runs the test binary, which dials target.
func probePlan(t *testing.T, target string) Plan {
	t.Helper()
	requireSandboxExec(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		t.Fatal(err)
	}
	return Plan{Program: self, Env: []string{probeEnv + "=" + target}, Workspace: canonical(t)}
}

func TestNetworkEnforced(t *testing.T) {
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := proxy.Addr().(*net.TCPAddr).Port

	for _, c := range []struct {
		name    string
		target  string
		network bool
		want    string
	}{
		{"offline, proxy port", proxy.Addr().String(), false, "failed"},
		{"online, proxy port", proxy.Addr().String(), true, "connected"},
		{"online, other port", other.Addr().String(), true, "failed"},
	} {
		p := probePlan(t, c.target)
		if c.network {
			p.Network, p.ProxyPort = true, port
		}
		out, err := run(t, p)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: output %q, error %v; want %s", c.name, out, err, c.want)
		}
	}
}

func TestCancelKillsTheGroup(t *testing.T) {
	p := bashPlan(t, `/bin/sleep 60 & /bin/sleep 60`)
	p.Exec, p.Fork = []string{"/bin/sleep"}, true
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Run(ctx, nil, nil)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("Run returned %v after %v", err, time.Since(start))
	}
}

func TestLinkedWorkspaceRefused(t *testing.T) {
	p := bashPlan(t, "true")
	link := filepath.Join(canonical(t), "ws")
	if err := os.Symlink(p.Workspace, link); err != nil {
		t.Fatal(err)
	}
	p.Workspace = link
	if _, err := p.Command(context.Background()); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("Command() = %v, want ErrInvalidPlan", err)
	}
}
