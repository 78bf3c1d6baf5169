package procinit

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWithLifeline starts the init of spec with a lifeline on descriptor
// 5 and returns the lifeline's write end, which the test holds as the
// launcher would, and a function that waits for the init. With gone, that
// end is closed before the init starts.
func startWithLifeline(t *testing.T, spec Spec, gone bool) (launcher *os.File, wait func() result) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec.Lifeline = true
	cmd, err := Command(self, spec)
	if err != nil {
		t.Fatal(err)
	}
	readUsage, err := WithUsage(cmd)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, r) // descriptor 5
	cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if gone {
		w.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles[0].Close()
	r.Close()
	t.Cleanup(func() { w.Close() })
	return w, func() result {
		t.Helper()
		_ = cmd.Wait()
		u, err := readUsage()
		if err != nil {
			t.Fatalf("usage: %v (stderr %q)", err, stderr.String())
		}
		return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), usage: u}
	}
}

// TestLifelineKillsTreeWhenLauncherGoes: once the launcher's end of the
// lifeline closes, the target and what it started die, setsid'd or not,
// and the init reports it.
func TestLifelineKillsTreeWhenLauncherGoes(t *testing.T) {
	t.Parallel()
	m := marker()
	launcher, wait := startWithLifeline(t, sh(fmt.Sprintf(`(setsid sleep %s &); sleep %s & wait`, m, m)), false)
	deadline := time.Now().Add(waitLong)
	for len(running(m)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("target did not start its children")
		}
		time.Sleep(10 * time.Millisecond)
	}
	launcher.Close()
	r := wait()
	if r.usage.Signal != int(syscall.SIGKILL) || r.code != 128+int(syscall.SIGKILL) || !strings.Contains(r.stderr, "launcher is gone") {
		t.Errorf("exit %d usage %+v stderr %q, want the target killed", r.code, r.usage, r.stderr)
	}
	gone(t, m)
}

// TestLifelineClosedTargetNeverStarts: an init whose launcher is already
// gone does not start the target. (The end is closed before the init
// starts: the C init is fast enough to start the target before a close
// that follows Start.)
func TestLifelineClosedTargetNeverStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, wait := startWithLifeline(t, sh("touch "+dir+"/ran"), true)
	r := wait()
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Fatalf("the target ran without its launcher (exit %d, stderr %q)", r.code, r.stderr)
	}
	if r.code != ExitInitFailed || !strings.Contains(r.stderr, "launcher is gone") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
}

// TestLifelineHeldTargetRuns: with the launcher's end open the target
// runs to its end as usual.
func TestLifelineHeldTargetRuns(t *testing.T) {
	t.Parallel()
	launcher, wait := startWithLifeline(t, sh("echo ok; exit 4"), false)
	r := wait()
	launcher.Close()
	if r.code != 4 || r.stdout != "ok\n" || r.usage.Signal != 0 {
		t.Errorf("exit %d stdout %q usage %+v (stderr %q)", r.code, r.stdout, r.usage, r.stderr)
	}
}
