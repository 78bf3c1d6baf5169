package processrun

// Spawn cost of process.run (issue 4, point 9): what one call of
// /usr/bin/true costs in tier B and in tier C, against the bare spawns each
// tier adds to, measured in the same run. docs/benchmarks.md has the method,
// the command and the figures.
//
//	bare_exec   os/exec starts /usr/bin/true and waits: tier B's baseline
//	tier_B      Tool.Run of {"command":"true"} in tier B
//	bare_bwrap  bwrap with tier C's namespace and process options, as tier
//	            C's host uid, with only /usr and the host's symlinks into
//	            it: tier C's baseline
//	tier_C      Tool.Run of {"command":"true"} in tier C
//
// Both tiers go through the public Tool.Run, so the figures follow whatever
// the tiers do today. BenchmarkSpawn measures each spawner with b.N calls.
// TestSpawnCost is the ratio mode: -spawn.rounds N rounds of -spawn.calls M
// calls of every spawner, interleaved (the order rotates by one each round),
// logging tier_B/bare_exec and tier_C/bare_bwrap per round, by wall time
// and by CPU time (user+system of this process and of every process it
// waited for), and their median, min and max. Without -spawn.rounds it
// is a smoke test of one short round. -spawn.self sets tier B's init binary
// (Config.Self); by default it is this test binary.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/sandbox/bwrap"
)

var (
	spawnRounds = flag.Int("spawn.rounds", 0, "TestSpawnCost: interleaved rounds of the four spawners (0: one short smoke round)")
	spawnCalls  = flag.Int("spawn.calls", 200, "TestSpawnCost: calls of each spawner per round")
	spawnSelf   = flag.String("spawn.self", "", "tier B's init binary (Config.Self), e.g. a fresh build of ./cmd/execledger (default: this test binary)")
)

// spawnInput is the call both tiers run.
const spawnInput = `{"command":"true"}`

// spawner is one way of running /usr/bin/true once, to its end.
type spawner struct {
	name string
	run  func() error
}

// spawners returns the four spawners, baselines before the tiers they
// are compared with.
func spawners(tb testing.TB) []spawner {
	tb.Helper()
	program, err := lookPath("true", nil)
	if err != nil {
		tb.Fatal(err)
	}
	bwrapPath, _, err := bwrap.Available()
	if err != nil {
		tb.Fatal(err)
	}
	self := *spawnSelf
	if self == "" {
		if self, err = os.Executable(); err != nil {
			tb.Fatal(err)
		}
	}
	root := spawnRoot(tb)
	tierC := spawnTool(tb, "C", self, root)
	bare := bareBwrapArgs(tb, program, root)
	cred := bareBwrapCredential(tierC)
	tb.Logf("tier B init: %s; bare bwrap (as %+v): %s %s", self, cred, bwrapPath, strings.Join(bare, " "))
	return []spawner{
		{"bare_exec", func() error { return exec.Command(program).Run() }},
		{"tier_B", toolSpawner(spawnTool(tb, "B", self, root))},
		{"bare_bwrap", func() error {
			cmd := exec.Command(bwrapPath, bare...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			return cmd.Run()
		}},
		{"tier_C", toolSpawner(tierC)},
	}
}

// bareBwrapCredential is the host credential tier C runs bwrap under, so
// that the bare baseline's namespaces are made by the same user: as root,
// tier C runs bwrap as Config.UID/GID (bwrap.Plan.HostUID); nil otherwise.
func bareBwrapCredential(tierC *Tool) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: tierC.cfg.UID, Gid: tierC.cfg.GID, Groups: []uint32{}}
}

// spawnRoot returns a temporary directory the sandbox uid can traverse.
func spawnRoot(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	for d := root; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// spawnTool returns a tool of tier with defaults but for the policy,
// which allows "true".
func spawnTool(tb testing.TB, tier, self, root string) *Tool {
	tb.Helper()
	tool, err := New(Config{
		Tier: tier, Self: self, WorkspaceRoot: filepath.Join(root, "ws-"+tier),
		Policy: procinput.Policy{AllowedExecutables: []string{"true"}, EgressMode: procinput.EgressNone},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return tool
}

// toolSpawner returns a spawner calling tool.Run. Every call uses the same
// run, so its workspace is created once.
func toolSpawner(tool *Tool) func() error {
	return func() error {
		res := tool.Run(context.Background(), call("bench", spawnInput))
		if res.ErrorKind != "" {
			return fmt.Errorf("tier %s: %s: %s (%s)", tool.Tier(), res.ErrorKind, res.Error, res.Output)
		}
		return nil
	}
}

// bwrapArity is how many values each bwrap option takes; an option not
// listed takes none.
var bwrapArity = map[string]int{
	"--uid": 1, "--gid": 1, "--hostname": 1, "--cap-drop": 1, "--cap-add": 1, "--chdir": 1,
	"--unsetenv": 1, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--mqueue": 1, "--dir": 1,
	"--remount-ro": 1, "--seccomp": 1, "--add-seccomp-fd": 1, "--info-fd": 1, "--json-status-fd": 1,
	"--block-fd": 1, "--userns-block-fd": 1, "--sync-fd": 1, "--lock-file": 1, "--userns": 1,
	"--userns2": 1, "--pidns": 1, "--argv0": 1, "--exec-label": 1, "--file-label": 1,
	"--perms": 1, "--size": 1, "--chmod": 2, "--setenv": 2, "--symlink": 2, "--file": 2,
	"--bind-data": 2, "--ro-bind-data": 2,
	"--bind": 2, "--bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2,
	"--overlay-src": 1, "--overlay": 3, "--tmp-overlay": 1, "--ro-overlay": 1,
}

// bareKeeps are the options of tier C's argv the bare baseline keeps: the
// namespaces and the process's credentials and session.
var bareKeeps = []string{
	"--unshare-all", "--unshare-user", "--unshare-user-try", "--unshare-ipc", "--unshare-pid",
	"--unshare-net", "--unshare-uts", "--unshare-cgroup", "--unshare-cgroup-try", "--share-net",
	"--disable-userns", "--assert-userns-disabled", "--die-with-parent", "--new-session",
	"--as-pid-1", "--cap-drop", "--cap-add", "--hostname", "--clearenv", "--uid", "--gid",
}

// bareBwrapArgs returns the bare baseline's argv for running program: the
// options of bareKeeps taken from the argv tier C builds (bwrap.Plan.Args,
// so they follow it), /usr read-only and the host's symlinks into it.
// Everything else is left out: environment, /etc binds, generated files,
// /proc, /dev, /tmp, the workspace, the root's remount, seccomp and any
// descriptor protocol.
func bareBwrapArgs(tb testing.TB, program, workspace string) []string {
	tb.Helper()
	full, files, err := bwrap.Plan{Program: program, Workspace: workspace}.Args()
	closeFiles(files)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for i := 0; i < len(full) && full[i] != "--"; i++ {
		opt, n := full[i], bwrapArity[full[i]]
		if i+n >= len(full) {
			tb.Fatalf("bwrap argv ends inside %s: %q", opt, full)
		}
		vals := full[i+1 : i+1+n]
		keep := slices.Contains(bareKeeps, opt) || opt == "--symlink" ||
			(opt == "--ro-bind" && vals[0] == "/usr")
		if keep {
			out = append(out, full[i:i+1+n]...)
		}
		i += n
	}
	if !slices.Contains(out, "--unshare-user") && !slices.Contains(out, "--unshare-all") {
		tb.Fatalf("tier C's argv %q has no user namespace option", full)
	}
	return append(out, "--", program)
}

func BenchmarkSpawn(b *testing.B) {
	for _, s := range spawners(b) {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// spawnPairs are the ratios TestSpawnCost reports, as indexes into
// spawners: measured over baseline.
var spawnPairs = [][2]int{{1, 0}, {3, 2}}

// spawnCost is what one spawner cost per call in one round.
type spawnCost struct{ wall, cpu time.Duration }

func TestSpawnCost(t *testing.T) {
	ss := spawners(t)
	rounds, calls := *spawnRounds, *spawnCalls
	if rounds <= 0 {
		// The smoke test: one call each. Under -race a tier B call takes
		// over a second (a race-built init sleeps a second at exit).
		rounds, calls = 1, 1
	} else {
		for _, s := range ss { // warm up: page cache, first workspace
			if err := s.run(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ratios := make([][2][]float64, len(spawnPairs)) // [pair][wall, cpu][round]
	t.Logf("µs per call (wall / CPU of this process and its children), %d calls per spawner per round", calls)
	for r := range rounds {
		costs := make([]spawnCost, len(ss))
		for k := range ss {
			i := (r + k) % len(ss)
			costs[i] = measureSpawner(t, ss[i], calls)
		}
		line := fmt.Sprintf("round %2d:", r+1)
		for i, c := range costs {
			line += fmt.Sprintf("  %s %s/%s", ss[i].name, micros(c.wall), micros(c.cpu))
		}
		for p, pair := range spawnPairs {
			m, base := costs[pair[0]], costs[pair[1]]
			ratios[p][0] = append(ratios[p][0], float64(m.wall)/float64(base.wall))
			ratios[p][1] = append(ratios[p][1], float64(m.cpu)/float64(base.cpu))
			line += fmt.Sprintf("  %s/%s %.2f/%.2f", ss[pair[0]].name, ss[pair[1]].name, ratios[p][0][r], ratios[p][1][r])
		}
		t.Log(line)
	}
	for p, pair := range spawnPairs {
		for k, what := range []string{"wall", "CPU"} {
			med, lo, hi := spread(ratios[p][k])
			t.Logf("%s/%s by %s: median %.2f, min %.2f, max %.2f over %d rounds",
				ss[pair[0]].name, ss[pair[1]].name, what, med, lo, hi, rounds)
		}
	}
}

// measureSpawner runs s calls times and returns its wall and CPU time per
// call. CPU time is this process's and its reaped descendants', so it
// includes the harness, the Go runtime and every process of the call.
func measureSpawner(t *testing.T, s spawner, calls int) spawnCost {
	t.Helper()
	cpu0, start := cpuTime(), time.Now()
	for range calls {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	return spawnCost{wall: wall / time.Duration(calls), cpu: cpu / time.Duration(calls)}
}

// cpuTime is the user and system time of this process and of the children
// it has waited for (and theirs).
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond))
}

// spread returns the median, minimum and maximum of xs.
func spread(xs []float64) (med, lo, hi float64) {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}
