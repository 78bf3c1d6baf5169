package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeAptGet puts an apt-get first on PATH that records its arguments,
// one line a run, in dir/calls and, while dir/locked-runs counts down,
// fails as apt-get does when another apt-get holds the lists lock; then
// it exits with code.
func fakeAptGet(t *testing.T, lockedRuns, code int) (dir string, environ []string) {
	t.Helper()
	dir = t.TempDir()
	script := `#!/bin/sh
echo "$*" >>"` + dir + `/calls"
n=$(cat "` + dir + `/locked-runs")
if [ "$n" -gt 0 ]; then
	echo $((n - 1)) >"` + dir + `/locked-runs"
	echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
	echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
	exit 100
fi
[ "` + strconv.Itoa(code) + `" -eq 0 ] || echo "E: Unable to locate package nosuch" >&2
exit ` + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "locked-runs"), []byte(strconv.Itoa(lockedRuns)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "APT_LOCK_POLL=0.05")
}

func runAptGet(t *testing.T, environ []string, args ...string) (code int, out string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"apt-get.sh"}, args...)...)
	cmd.Env = environ
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(b)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(b)
}

func calls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestAptGetWaitsForLocks: apt-get.sh runs apt-get again while another
// apt-get holds a lock, saying which, and succeeds once it is free; it
// lets apt-get wait for dpkg's locks itself.
func TestAptGetWaitsForLocks(t *testing.T) {
	t.Parallel()
	dir, environ := fakeAptGet(t, 2, 0)
	code, out := runAptGet(t, append(environ, "APT_LOCK_WAIT=600"), "update", "-q")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	got := calls(t, dir)
	if len(got) != 3 {
		t.Fatalf("apt-get ran %d times, want 3: %q", len(got), got)
	}
	for _, c := range got {
		if !strings.HasPrefix(c, "-o DPkg::Lock::Timeout=") || !strings.HasSuffix(c, " update -q") {
			t.Errorf("apt-get %s", c)
		}
		s, _ := strings.CutPrefix(strings.Fields(c)[1], "DPkg::Lock::Timeout=")
		if n, err := strconv.Atoi(s); err != nil || n < 1 || n > 600 {
			t.Errorf("dpkg lock timeout %q, want 1 to 600 seconds", s)
		}
	}
	if n := strings.Count(out, "apt-get.sh: waiting for /var/lib/apt/lists/lock, held by another apt-get or dpkg"); n != 2 {
		t.Errorf("%d waiting messages, want 2:\n%s", n, out)
	}
}

// TestAptGetLockWaitIsBounded: a lock held for longer than APT_LOCK_WAIT
// fails with apt-get's code and says so.
func TestAptGetLockWaitIsBounded(t *testing.T) {
	t.Parallel()
	_, environ := fakeAptGet(t, 1<<30, 0)
	code, out := runAptGet(t, append(environ, "APT_LOCK_WAIT=1"), "install", "-y", "make")
	if code != 100 || !strings.Contains(out, "apt-get.sh: /var/lib/apt/lists/lock is still held after 1s (APT_LOCK_WAIT); giving up") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestAptGetOtherErrorsFailAtOnce: an error that is not a held lock is
// not retried, and apt-get's message and code come through.
func TestAptGetOtherErrorsFailAtOnce(t *testing.T) {
	t.Parallel()
	dir, environ := fakeAptGet(t, 0, 100)
	code, out := runAptGet(t, append(environ, "APT_LOCK_WAIT=600"), "install", "-y", "nosuch")
	if code != 100 || !strings.Contains(out, "Unable to locate package nosuch") || strings.Contains(out, "waiting for") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if got := calls(t, dir); len(got) != 1 {
		t.Errorf("apt-get ran %d times: %q", len(got), got)
	}
}
