package seccomp

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// bwrapScript tries to create a user namespace, then shows the seccomp
// mode and that ordinary fork and exec still work.
const bwrapScript = `unshare -U true 2>&1; echo rc=$?; grep '^Seccomp:' /proc/self/status; /bin/true && echo true-ok`

// runBwrap runs bwrapScript under bubblewrap, passing program (when not
// nil) on fd 3 with --seccomp 3.
func runBwrap(t *testing.T, program []byte) string {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatalf("bubblewrap is required for this test, install it with apt-get install -y bubblewrap: %v", err)
	}
	args := []string{"--ro-bind", "/", "/", "--die-with-parent"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap)
	if program != nil {
		f, err := os.CreateTemp(t.TempDir(), "filter-")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(program); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = []*os.File{f} // fd 3
		args = append(args, "--seccomp", "3")
	}
	cmd.Args = append(append(cmd.Args, args...), "/bin/sh", "-c", bwrapScript)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return string(out)
}

func TestBubblewrapSeccompFD(t *testing.T) {
	f, err := Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	control := runBwrap(t, nil)
	t.Logf("without --seccomp:\n%s", control)
	if !strings.Contains(control, "Seccomp:\t"+procStatus("Seccomp")+"\n") || !strings.Contains(control, "true-ok") {
		t.Errorf("without --seccomp the sandbox should run under the same seccomp mode (%s) as the test:\n%s", procStatus("Seccomp"), control)
	}

	out := runBwrap(t, f.Bytes())
	t.Logf("with --seccomp:\n%s", out)
	rc := regexp.MustCompile(`rc=(\d+)`).FindStringSubmatch(out)
	if rc == nil || rc[1] == "0" {
		t.Errorf("unshare -U succeeded under the filter:\n%s", out)
	}
	if !strings.Contains(out, "Operation not permitted") {
		t.Errorf("unshare -U did not fail with EPERM:\n%s", out)
	}
	if !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("bwrap did not install the filter:\n%s", out)
	}
	if !strings.Contains(out, "true-ok") {
		t.Errorf("fork and exec failed under the filter:\n%s", out)
	}
}
