package processrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/redact"
	"github.com/execledger/execledger/internal/sandbox/jobobject"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/sandbox/sandboxexec"
	"github.com/execledger/execledger/ledger"
)

// Tier C off Linux: macOS runs the program under sandbox-exec
// (internal/sandbox/sandboxexec), Windows in a job object
// (internal/sandbox/jobobject); tool_native.go is the tool there. What
// those backends cannot enforce is refused, never run weaker: the
// functions below decide it and build the backends' plans. They are pure
// and build on every platform, so Linux's tests cover them.

// Reasons of the refusals off Linux.
const (
	// reasonBackgroundUnsupported: background processes need Linux
	// (capability_denied).
	reasonBackgroundUnsupported = "process.background_unsupported"
	// reasonEgressUnsupported: the backend cannot confine the network as
	// strict egress with declared hosts needs (egress_denied).
	reasonEgressUnsupported = "egress.strict_unsupported_by_backend"
)

// nativeBackend is a tier C backend off Linux.
type nativeBackend struct {
	// executor and backend are the labels of events and attestations.
	executor, backend string
	// offline: the backend denies all network access, so strict egress
	// without declared hosts (an offline run) is enforced. Strict egress
	// with declared hosts needs the egress proxy, which no backend off
	// Linux is given.
	offline bool
}

var (
	seatbeltBackend  = nativeBackend{executor: sandboxexec.Executor, backend: sandboxexec.Backend, offline: true}
	jobObjectBackend = nativeBackend{executor: jobobject.Executor, backend: jobobject.Backend}
)

// checkConfig refuses, when the tool is built, a configuration the
// backend cannot honour: tier B (procinit and seccomp are Linux's), a
// strict egress policy that needs network isolation it does not have,
// and a workspace TTL (the sweep needs Linux's /proc to see which
// processes hold a workspace).
func (b nativeBackend) checkConfig(tier, egressMode string, workspaceTTL time.Duration) error {
	switch {
	case tier != "C":
		return fmt.Errorf("processrun: tier %q: only tier C is available here, under %s (tier B needs Linux)", tier, b.backend)
	case egressMode == procinput.EgressStrict && !b.offline:
		return fmt.Errorf("processrun: egress_mode strict cannot be enforced by %s, which does not isolate the network; use none or preflight", b.backend)
	case workspaceTTL > 0:
		return fmt.Errorf("processrun: workspace_ttl %s: deleting idle workspaces needs Linux; set it to 0 to keep them", workspaceTTL)
	}
	return nil
}

// refuse returns the refusal of a checked call the backend cannot run as
// asked, or nil.
func (b nativeBackend) refuse(plan *procinput.Plan) *executor.Refusal {
	switch {
	case plan.Background != "":
		return &executor.Refusal{Kind: ledger.KindCapabilityDenied, Reason: reasonBackgroundUnsupported,
			Message: "background processes need Linux; run in the foreground"}
	case plan.EgressMode == procinput.EgressStrict && (!b.offline || len(plan.EgressHosts) > 0):
		return &executor.Refusal{Kind: ledger.KindEgressDenied, Reason: reasonEgressUnsupported,
			Message: fmt.Sprintf("strict egress to declared hosts cannot be enforced by %s; declare no hosts to run offline", b.backend)}
	}
	return nil
}

// seatbeltPlan is a checked call as a sandbox-exec plan: the program (a
// canonical path) and nothing else may be executed, no fork, the
// workspace read-write, no network.
func seatbeltPlan(plan *procinput.Plan, program string) sandboxexec.Plan {
	return sandboxexec.Plan{Program: program, ProgramArgs: plan.Args, Env: plan.Env, Workspace: plan.Root, Dir: plan.Dir}
}

// jobPlan is a checked call as a job object plan, with the rlimits the
// job object has: the process count, each process's committed memory
// (for RLIMIT_AS) and user CPU time. The file size and open file limits
// have no job object equivalent; the Enforcement record lists what is set.
func jobPlan(plan *procinput.Plan, program string, l procinit.Limits) jobobject.Plan {
	return jobobject.Plan{Program: program, ProgramArgs: plan.Args, Env: plan.Env, Dir: plan.Dir, Timeout: plan.Timeout,
		Limits: jobobject.Limits{
			ActiveProcesses: uint32(min(l.Processes, math.MaxUint32)),
			ProcessMemory:   l.AddressSpace,
			ProcessUserTime: time.Duration(min(l.CPUSeconds, uint64(math.MaxInt64/int64(time.Second)))) * time.Second,
		}}
}

// lookPathIn finds command in the directories of path (split by sep),
// trying each of exts as a suffix ("" for the bare name): the first
// absolute, executable regular file. A directory that is not absolute is
// skipped.
func lookPathIn(command, path string, sep rune, exts []string, executable func(os.FileMode) bool) (string, error) {
	for _, dir := range strings.Split(path, string(sep)) {
		if !filepath.IsAbs(dir) {
			continue
		}
		for _, ext := range exts {
			p := filepath.Join(dir, command+ext)
			fi, err := os.Stat(p)
			if err == nil && fi.Mode().IsRegular() && executable(fi.Mode()) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %s", command, path)
}

// envValue returns the value of key in env, or def.
func envValue(env []string, key, def string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			def = v
		}
	}
	return def
}

// budget is stdout's and stderr's shared output budget. Writes past it
// are counted as truncation and dropped, never refused, so the program is
// not blocked while it is being stopped; over is closed at the first byte
// past the budget.
type budget struct {
	mu    sync.Mutex
	left  int
	out   [2][]byte
	trunc [2]bool
	over  chan struct{}
	once  sync.Once
}

func newBudget(limit int) *budget { return &budget{left: limit, over: make(chan struct{})} }

// writer is stream i's writer: 0 stdout, 1 stderr.
func (b *budget) writer(i int) io.Writer { return budgetWriter{b, i} }

type budgetWriter struct {
	b *budget
	i int
}

func (w budgetWriter) Write(p []byte) (int, error) {
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	take := min(len(p), b.left)
	b.out[w.i] = append(b.out[w.i], p[:take]...)
	b.left -= take
	if take < len(p) {
		b.trunc[w.i] = true
		b.once.Do(func() { close(b.over) })
	}
	return len(p), nil
}

// overflowed reports whether output passed the budget.
func (b *budget) overflowed() bool {
	select {
	case <-b.over:
		return true
	default:
		return false
	}
}

// nativeEnd is how a native run that started ended.
type nativeEnd struct {
	code                int // the exit status, 128+sig after a signal
	timedOut, cancelled bool
	cause               error
	wall                time.Duration
	resources           map[string]int64
}

// nativeResult builds the Result of a native run that started: the
// stored output and its classification, as Linux's tiers report them.
func nativeResult(be nativeBackend, red *redact.Redactor, limit int, out *budget, end nativeEnd, enf map[string]any) executor.Result {
	res := executor.Result{Enforcement: enf, Resources: map[string]int64{"wall_ms": end.wall.Milliseconds()}}
	for k, v := range end.resources {
		res.Resources[k] = v
	}
	out.mu.Lock()
	stdout, stderr, trunc := out.out[0], out.out[1], out.trunc
	out.mu.Unlock()
	o := runOutput{ExitCode: end.code, StdoutTruncated: trunc[0], StderrTruncated: trunc[1],
		DurationMS: end.wall.Milliseconds(), Tier: "C", SandboxBackend: be.backend}
	o.Stdout, o.StdoutLossy = storable(red, stdout)
	o.Stderr, o.StderrLossy = storable(red, stderr)
	res.Resources["output_bytes"] = int64(len(stdout) + len(stderr))
	switch {
	case end.timedOut:
		res.ErrorKind, res.Error, res.TimedOut = ledger.KindTimedOut, "the process exceeded its timeout and was killed", true
	case end.cancelled:
		res.ErrorKind, res.Error = ledger.KindCancelled, fmt.Sprintf("cancelled: %v", end.cause)
	case out.overflowed():
		res.ErrorKind, o.LimitExceeded = ledger.KindQuotaExceeded, limitOutput
		res.Error = fmt.Sprintf("output exceeded %d bytes; the process was stopped and the output truncated", limit)
	case end.code != 0:
		res.ErrorKind, res.Error = ledger.KindRuntimeFailure, fmt.Sprintf("the process exited with status %d", end.code)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err == nil {
		res.Output = json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
	}
	code := end.code
	res.ExitStatus = &code
	return res
}

// notStarted is the result of a run whose program never started: the
// deadline or the executor's context ended first, or the backend failed.
func notStarted(ctx context.Context, timeout bool, err error, enf map[string]any) executor.Result {
	var r executor.Result
	switch {
	case timeout:
		r = failure(ledger.KindTimedOut, "timed out before the process started")
		r.TimedOut = true
	case ctx.Err() != nil:
		r = failure(ledger.KindCancelled, fmt.Sprintf("cancelled before the process started: %v", context.Cause(ctx)))
	default:
		r = failure(ledger.KindSpawnFailed, err.Error())
	}
	r.Enforcement = enf
	return r
}
