package processrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/cgroup"
)

// crashEnv names the environment variable that makes this test binary a
// tier C executor for TestTierCSandboxesDieWithTheirExecutor (see
// TestMain); its value is a crashSpec in JSON.
const crashEnv = "EXECLEDGER_PROCESSRUN_CRASH_EXECUTOR"

// The crash test's size: rounds of executors killed together. bubblewrap's
// window (its sandbox's pid 1 waits for its monitor, which the executor's
// death kills) is short: on a 2-core machine the code before the fix left a
// sandbox behind in about one round of 10.
const (
	crashRounds    = 12
	crashExecutors = 2
)

// crashSpec is the executor a crash test starts.
type crashSpec struct {
	Root   string `json:"root"`   // WorkspaceRoot
	UID    uint32 `json:"uid"`    // Config.UID: the sandboxes' host uid, this test's alone
	Cgroup string `json:"cgroup"` // cgroup.Options.Name
	Long   string `json:"long"`   // the argument of the long sleeps
}

// tool is the executor's process.run, configured as serve configures it.
func (s crashSpec) tool() (*Tool, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return New(Config{Tier: "C", Self: self, WorkspaceRoot: s.Root, UID: s.UID, GID: s.UID,
		Cgroups: CgroupsRequired, CgroupOptions: cgroup.Options{Name: s.Cgroup},
		Policy: procinput.Policy{AllowedExecutables: []string{"sleep"}, EgressMode: procinput.EgressNone}})
}

// crashExecutor is the child: it starts as serve does (New, then
// SweepOrphans), says "ready" with the number of processes its sweep
// killed, and runs process.run calls until it is
// killed: two long sleeps and a churn of short ones, so that at any moment
// some sandboxes are being set up.
func crashExecutor() int {
	var s crashSpec
	if err := json.Unmarshal([]byte(os.Getenv(crashEnv)), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tool, err := s.tool()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	orphans, err := tool.SweepOrphans(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	killed := 0
	for _, o := range orphans {
		killed += len(o.PIDs)
	}
	fmt.Printf("ready %d\n", killed)
	for w := range 10 {
		go func() {
			for i := 0; ; i++ {
				arg := s.Long
				if w >= 2 {
					arg = fmt.Sprintf("0.0%d", 1+i%9)
				}
				in := fmt.Sprintf(`{"command":"sleep","args":[%q],"timeout_ms":600000}`, arg)
				tool.Run(context.Background(), call(fmt.Sprintf("run-%d", w), in))
			}
		}()
	}
	select {}
}

// uidProcesses lists the live processes whose real uid is uid.
func uidProcesses(uid uint32) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var real, state string
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				real = strings.Fields(v)[0]
			}
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				state = strings.TrimSpace(v)
			}
		}
		if real != strconv.FormatUint(uint64(uid), 10) || strings.HasPrefix(state, "Z") {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if len(cmd) > 100 {
			cmd = cmd[:100]
		}
		out = append(out, fmt.Sprintf("%s [%s] %s", e.Name(), state, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// crashUID picks a host uid no process uses, for one test's sandboxes.
func crashUID(t *testing.T) uint32 {
	t.Helper()
	for uid := uint32(61000 + os.Getpid()%1000); uid < 63000; uid++ {
		if len(uidProcesses(uid)) == 0 {
			return uid
		}
	}
	t.Fatal("no free uid in 61000-63000")
	return 0
}

// TestTierCSandboxesDieWithTheirExecutor: an executor killed with SIGKILL
// during a burst of tier C calls leaves nothing behind once the next
// executor on the host has started, whether its sandboxes were running
// their programs or still being set up by bubblewrap (whose
// --die-with-parent covers neither bubblewrap's own setup nor the moment
// before it, containers/bubblewrap#633).
func TestTierCSandboxesDieWithTheirExecutor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the crash test gives its sandboxes a host uid of their own, which needs root")
	}
	tool := newTool(t, "C", procinput.Policy{}) // for its workspace root's permissions
	s := crashSpec{Root: tool.cfg.WorkspaceRoot, UID: crashUID(t), Long: tbMarker(600),
		Cgroup: fmt.Sprintf("exltest-crash-%d", os.Getpid())}
	spec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var logs sync.Map
	t.Cleanup(func() {
		// Whatever the outcome, leave nothing running: kill the uid's
		// processes (only this test uses it) and the cgroup parent.
		for _, p := range uidProcesses(s.UID) {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if next, err := s.tool(); err == nil {
			_, _ = next.SweepOrphans(context.Background())
			if next.cfg.cgroups != nil && next.cfg.cgroups.m != nil {
				_ = syscall.Rmdir(next.cfg.cgroups.m.Path())
			}
		}
		if t.Failed() {
			logs.Range(func(k, v any) bool {
				t.Logf("executor %v stderr:\n%s", k, tail(v.(*bytes.Buffer).String(), 2000))
				return true
			})
		}
	})
	stuck := 0 // processes the executors' sweeps killed, round after round
	for round := range crashRounds {
		execs := make([]*exec.Cmd, crashExecutors)
		for i := range execs {
			var n int
			execs[i] = startCrashExecutor(t, spec, &logs, fmt.Sprintf("%d.%d", round, i), &n)
			stuck += n
		}
		// Every executor's long sleeps run, and the churn goes on around
		// them.
		deadline := time.Now().Add(waitLong)
		for len(tbPids("sleep\x00"+s.Long)) < 2*crashExecutors {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the long sleeps did not start: %v", round, uidProcesses(s.UID))
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(50+round*20) * time.Millisecond)
		for _, cmd := range execs {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		for _, cmd := range execs {
			_ = cmd.Wait()
		}
	}
	// The next executor on the host starts as serve does.
	next, err := s.tool()
	if err != nil {
		t.Fatal(err)
	}
	orphans, err := next.SweepOrphans(context.Background())
	if err != nil {
		t.Error(err)
	}
	// It found the leaves of the last round's executors, which never
	// removed them (each round's executors swept the round before).
	owners, killed := map[string]bool{}, 0
	for _, o := range orphans {
		owners[o.Owner] = true
		killed += len(o.PIDs)
	}
	if len(owners) != crashExecutors {
		t.Errorf("the sweep found the leaves of %d dead executors, want %d: %+v", len(owners), crashExecutors, orphans)
	}
	t.Logf("the executors' sweeps killed %d processes of dead executors; the last one swept %d leaves of %d and killed %d",
		stuck, len(orphans), len(owners), killed)
	// Killed processes may take a moment to go; nothing may stay.
	deadline := time.Now().Add(waitLong)
	for {
		left := uidProcesses(s.UID)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				pid := strings.Fields(l)[0]
				st, _ := os.ReadFile("/proc/" + pid + "/stack")
				wc, _ := os.ReadFile("/proc/" + pid + "/wchan")
				t.Logf("%s wchan %s stack %s", pid, wc, st)
			}
			t.Fatalf("%d sandbox processes of the killed executors outlived them:\n%s", len(left), strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startCrashExecutor starts the executor of spec (crashExecutor) and waits
// until it is ready, setting swept to the processes its sweep killed; the
// test's cleanup kills it if the test does not.
func startCrashExecutor(t *testing.T, spec []byte, logs *sync.Map, label string, swept *int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(spec))
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	logs.Store(label, &stderr)
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if _, err := fmt.Sscanf(line, "ready %d\n", swept); err != nil {
			t.Fatalf("executor %s did not start: %q", label, line)
		}
	case <-time.After(waitLong):
		t.Fatalf("executor %s did not start within %s", label, waitLong)
	}
	return cmd
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
