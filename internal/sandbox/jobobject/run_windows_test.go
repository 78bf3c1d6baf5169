//go:build windows

package jobobject

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cmdPlan runs cmd.exe /c line in a fresh directory, with SystemRoot only.
func cmdPlan(t *testing.T, line string) Plan {
	t.Helper()
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	root := os.Getenv("SystemRoot")
	return Plan{
		Program:     filepath.Join(root, "System32", "cmd.exe"),
		ProgramArgs: []string{"/d", "/c", line},
		Env:         []string{"SystemRoot=" + root},
		Dir:         t.TempDir(),
	}
}

func run(t *testing.T, p Plan) (Exit, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	exit, err := p.Run(ctx, &out, &out)
	return exit, out.String(), err
}

func TestRunExitCodeAndOutput(t *testing.T) {
	p := cmdPlan(t, "echo %GREETING%& exit 3")
	p.Env = append(p.Env, "GREETING=hello")
	exit, out, err := run(t, p)
	if err != nil || exit.Code != 3 || strings.TrimSpace(out) != "hello" {
		t.Fatalf("exit %+v, output %q, error %v", exit, out, err)
	}
	// The console host may be counted with cmd.exe.
	if exit.Processes < 1 || exit.TimedOut {
		t.Errorf("exit %+v", exit)
	}
}

func TestEnvironmentIsThePlans(t *testing.T) {
	p := cmdPlan(t, "if defined USERPROFILE (echo LEAKED) else (echo clean)")
	if _, out, err := run(t, p); err != nil || strings.TrimSpace(out) != "clean" {
		t.Errorf("output %q, error %v", out, err)
	}
}

func TestTimeoutTerminatesTheJob(t *testing.T) {
	p := cmdPlan(t, `%SystemRoot%\System32\ping.exe -n 60 127.0.0.1 >NUL`)
	p.Timeout = 500 * time.Millisecond
	start := time.Now()
	exit, out, err := run(t, p)
	if err != nil || !exit.TimedOut || exit.Code != KilledExitCode || time.Since(start) > 20*time.Second {
		t.Errorf("exit %+v, output %q, error %v after %v", exit, out, err, time.Since(start))
	}
}

func TestCancelTerminatesTheJob(t *testing.T) {
	p := cmdPlan(t, `%SystemRoot%\System32\ping.exe -n 60 127.0.0.1 >NUL`)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := p.Run(ctx, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run() = %v, want the context's error", err)
	}
}

func TestActiveProcessLimit(t *testing.T) {
	// cmd.exe, a second cmd.exe and ping.exe are three processes (four
	// with a console host).
	line := `%SystemRoot%\System32\cmd.exe /d /c %SystemRoot%\System32\ping.exe -n 1 127.0.0.1 && echo STARTED`
	p := cmdPlan(t, line)
	p.Limits.ActiveProcesses = 8
	if exit, out, err := run(t, p); err != nil || !strings.Contains(out, "STARTED") || exit.Code != 0 {
		t.Fatalf("without a binding limit: exit %+v, output %q, error %v", exit, out, err)
	}
	p.Limits.ActiveProcesses = 2
	exit, out, err := run(t, p)
	if err != nil || strings.Contains(out, "STARTED") || exit.Code == 0 {
		t.Errorf("a third process started: exit %+v, output %q, error %v", exit, out, err)
	}
}

func TestMissingProgramFailsBeforeRunning(t *testing.T) {
	p := cmdPlan(t, "exit 0")
	p.Program = filepath.Join(p.Dir, "missing.exe")
	if _, _, err := run(t, p); err == nil {
		t.Error("Run() of a missing program succeeded")
	}
}
