package processrun_test

// End-to-end tests of process.run through the public contract: a request
// goes in with ledger.submit as a submitter's login role, a real executor
// (package executor) claims it and runs it in tier B or tier C, and the
// test reads the outcome back from ledger.requests and ledger.events, as
// a service and an auditor would. docs/process-sandbox.md maps these tests
// to Palyra's process-runner behaviours and weaknesses.
//
// The sandbox is attacked with scripts planted in the run's workspace, so
// that the paths and addresses they use are built at run time and never
// pass procinput's argument checks: what stops them is the sandbox.
//
// The test binary is tier B's init helper: TestMain in
// processrun_linux_test.go dispatches procinit.Hidden.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/redact"
	"github.com/execledger/execledger/internal/sandbox/processrun"
	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

const (
	e2ePrincipal = "alice"
	e2eCedar     = `permit (principal == Principal::"alice", action == Action::"tool.execute", resource == Tool::"process.run");`
	// nobody is tier C's uid inside the sandbox (processrun's default).
	nobody = processrun.DefaultUID
	// awaitLimit bounds how long a request may take to become final: a
	// hang bound, long enough for a machine busy with other work.
	awaitLimit = 2 * time.Minute
)

var e2eTiers = []string{"B", "C"}

// envConfig is what differs between the executors the tests start.
type envConfig struct {
	policy      procinput.Policy
	limits      procinit.Limits
	outputLimit int
	redactor    *redact.Redactor
}

// openPolicy allows every program, interpreters and launchers included:
// with it the argument checks stop nothing that matters, and the sandbox
// is what the tests attack.
func openPolicy() procinput.Policy {
	return procinput.Policy{AllowedExecutables: []string{"*"}, AllowInterpreters: true, EgressMode: procinput.EgressNone}
}

// restrictedPolicy is an allowlist as an operator would write one. Shells,
// interpreters, launchers and name-based kills are on it on purpose: the
// tests show they are refused anyway.
func restrictedPolicy() procinput.Policy {
	return procinput.Policy{
		AllowedExecutables: []string{"echo", "cat", "ls", "printf", "touch", "dd", "env", "find", "xargs", "git", "make",
			"sed", "awk", "tar", "setsid", "nohup", "timeout", "sleep", "kill", "pkill", "killall", "sh", "bash", "perl", "python3"},
		EgressMode:      procinput.EgressPreflight,
		EgressAllowlist: []string{"allowed.example"},
	}
}

// ledgerEnv is a database, a submitter, an auditor and a running executor
// whose only tool is process.run in one tier.
type ledgerEnv struct {
	tier      string
	root      string // the tool's WorkspaceRoot on the host
	submitter *pgxpool.Pool
	auditor   *pgxpool.Pool
	pub       ed25519.PublicKey // the executor's attestation key
}

// newLedgerEnv starts an executor with process.run in tier against a
// fresh database; it stops when t ends.
func newLedgerEnv(t *testing.T, tier string, cfg envConfig) *ledgerEnv {
	t.Helper()
	db := testdb.New(t)
	sub := db.LoginRole(t, e2ePrincipal, "ledger_submitter")
	aud := db.LoginRole(t, "", "ledger_auditor")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// t.TempDir's directories are 0700: tier B's uid must traverse them.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(dir, "ws")
	tool, err := processrun.New(processrun.Config{Tier: tier, Self: self, WorkspaceRoot: root, Policy: cfg.policy,
		Limits: cfg.limits, OutputLimit: cfg.outputLimit, Redactor: cfg.redactor})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.FromSources([]policy.Source{{Name: "e2e.cedar", Text: []byte(e2eCedar)}})
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := executor.New(db.Pool, executor.Config{Label: "e2e-tier-" + tier, Workers: 4, Lease: 10 * time.Second,
		PollInterval: 100 * time.Millisecond, RescueInterval: time.Second, ShutdownGrace: 5 * time.Second,
		ToolTimeout: awaitLimit, DefaultMaxCallsPerRun: 100000},
		pol, attest.NewSigner(priv), slog.New(slog.DiscardHandler), tool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("executor: %v", err)
			}
		case <-time.After(2 * time.Minute):
			t.Error("executor did not stop within 2 minutes")
		}
	})
	return &ledgerEnv{tier: tier, root: root, submitter: sub.Pool, auditor: aud.Pool, pub: pub}
}

// request is one row of ledger.requests.
type request struct {
	ID        uuid.UUID
	State     string
	ErrorKind string
	Error     string
	Output    []byte // the jsonb column as text; nil when NULL
	Tier      string
}

// procOutput is process.run's output object.
type procOutput struct {
	ExitCode        int    `json:"exit_code"`
	Signal          int    `json:"signal"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	StdoutLossy     bool   `json:"stdout_lossy"`
	StderrLossy     bool   `json:"stderr_lossy"`
	LimitExceeded   string `json:"limit_exceeded"`
	DurationMS      int64  `json:"duration_ms"`
	Tier            string `json:"tier"`
	SandboxBackend  string `json:"sandbox_backend"`
}

// event is one row of ledger.events.
type event struct {
	Version int64
	Type    string
	Payload []byte
}

// finished is the payload of execution.finished.
type finished struct {
	State       string           `json:"state"`
	ErrorKind   *string          `json:"error_kind"`
	TimedOut    bool             `json:"timed_out"`
	ExitStatus  *int             `json:"exit_status"`
	Resources   map[string]int64 `json:"resources"`
	Enforcement map[string]any   `json:"enforcement"`
	Output      json.RawMessage  `json:"output"`
	Executor    string           `json:"executor"`
	Tier        string           `json:"tier"`
}

// cmd is a process.run input without options.
func cmd(command string, args ...string) map[string]any {
	if args == nil {
		args = []string{}
	}
	return map[string]any{"command": command, "args": args}
}

// submit calls ledger.submit as the submitter; input is marshalled unless
// it is a string, which is sent as the JSON text itself.
func (e *ledgerEnv) submit(t *testing.T, runID string, input any) uuid.UUID {
	t.Helper()
	id, err := e.trySubmit(runID, input)
	if err != nil {
		t.Fatalf("ledger.submit: %v", err)
	}
	return id
}

func (e *ledgerEnv) trySubmit(runID string, input any) (uuid.UUID, error) {
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			return uuid.Nil, err
		}
		raw = string(b)
	}
	var run *string
	if runID != "" {
		run = &runID
	}
	var id uuid.UUID
	err := e.submitter.QueryRow(context.Background(),
		`SELECT ledger.submit('process.run', $1::text::jsonb, $2)`, raw, run).Scan(&id)
	return id, err
}

// get reads the request's row of ledger.requests as the submitter.
func (e *ledgerEnv) get(t *testing.T, id uuid.UUID) request {
	t.Helper()
	r := request{ID: id}
	var output *string
	err := e.submitter.QueryRow(context.Background(), `SELECT state, coalesce(error_kind, ''), coalesce(error, ''),
       output::text, coalesce(tier, '') FROM ledger.requests WHERE id = $1`, id).Scan(&r.State, &r.ErrorKind, &r.Error, &output, &r.Tier)
	if err != nil {
		t.Fatalf("read request %s: %v", id, err)
	}
	if output != nil {
		r.Output = []byte(*output)
	}
	return r
}

func final(state string) bool {
	switch state {
	case "succeeded", "failed", "denied", "cancelled":
		return true
	}
	return false
}

// await polls ledger.requests until the request is final.
func (e *ledgerEnv) await(t *testing.T, id uuid.UUID) request {
	t.Helper()
	deadline := time.Now().Add(awaitLimit)
	for {
		r := e.get(t, id)
		if final(r.State) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s is still %s after %s; events: %s", id, r.State, awaitLimit, e.eventTypes(t, id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run submits input under runID and waits for the request to be final.
func (e *ledgerEnv) run(t *testing.T, runID string, input any) request {
	t.Helper()
	return e.await(t, e.submit(t, runID, input))
}

// events reads the request's stream from ledger.events as the auditor.
func (e *ledgerEnv) events(t *testing.T, id uuid.UUID) []event {
	t.Helper()
	rows, err := e.auditor.Query(context.Background(),
		`SELECT version, type, payload::text FROM ledger.events WHERE stream = $1 ORDER BY version`, "request:"+id.String())
	if err != nil {
		t.Fatalf("read events of %s: %v", id, err)
	}
	defer rows.Close()
	var evs []event
	for rows.Next() {
		var ev event
		var payload string
		if err := rows.Scan(&ev.Version, &ev.Type, &payload); err != nil {
			t.Fatal(err)
		}
		ev.Payload = []byte(payload)
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func (e *ledgerEnv) eventTypes(t *testing.T, id uuid.UUID) string {
	t.Helper()
	var types []string
	for _, ev := range e.events(t, id) {
		types = append(types, ev.Type)
	}
	return strings.Join(types, " ")
}

// finished returns the request's execution.completed (or
// execution.finished) payload.
func (e *ledgerEnv) finished(t *testing.T, id uuid.UUID) finished {
	t.Helper()
	for _, ev := range e.events(t, id) {
		if ev.Type != "execution.completed" && ev.Type != "execution.finished" {
			continue
		}
		var f finished
		if err := json.Unmarshal(ev.Payload, &f); err != nil {
			t.Fatalf("execution.finished of %s: %v: %s", id, err, ev.Payload)
		}
		return f
	}
	t.Fatalf("request %s has no execution.completed or execution.finished; events: %s", id, e.eventTypes(t, id))
	return finished{}
}

// attested verifies the request's attestation envelope (of its
// attestation.signed or execution.completed) with the executor's key and
// returns its statement.
func (e *ledgerEnv) attested(t *testing.T, id uuid.UUID) *attest.Statement {
	t.Helper()
	for _, ev := range e.events(t, id) {
		if ev.Type != "attestation.signed" && ev.Type != "execution.completed" {
			continue
		}
		var p struct {
			Envelope string `json:"envelope"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatalf("%s of %s: %v", ev.Type, id, err)
		}
		st, err := attest.Verify([]byte(p.Envelope), e.pub)
		if err != nil {
			t.Fatalf("attestation of %s: %v", id, err)
		}
		return st
	}
	t.Fatalf("request %s has no attestation; events: %s", id, e.eventTypes(t, id))
	return nil
}

// output decodes the request's output column.
func output(t *testing.T, r request) procOutput {
	t.Helper()
	if r.Output == nil {
		t.Fatalf("request %s (%s %s: %s) has no output", r.ID, r.State, r.ErrorKind, r.Error)
	}
	var o procOutput
	if err := json.Unmarshal(r.Output, &o); err != nil {
		t.Fatalf("output of %s: %v: %s", r.ID, err, r.Output)
	}
	return o
}

// succeeded fails t unless r succeeded, and returns its output.
func succeeded(t *testing.T, r request) procOutput {
	t.Helper()
	if r.State != "succeeded" || r.ErrorKind != "" {
		t.Fatalf("request %s: state %s, error_kind %q (%s), output %s", r.ID, r.State, r.ErrorKind, r.Error, r.Output)
	}
	return output(t, r)
}

// workspace returns the host path of run's workspace, which a first
// request makes if it does not exist yet: the tool, not the test, decides
// its owner (tier B gives each run a uid of its own).
func (e *ledgerEnv) workspace(t *testing.T, runID string) string {
	t.Helper()
	dir := filepath.Join(e.root, e2ePrincipal, runID)
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	e.run(t, runID, cmd("echo", "workspace"))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the tool made no workspace for run %s: %v", runID, err)
	}
	return dir
}

// owner is the uid and gid owning path.
func owner(t *testing.T, path string) (uid, gid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// runUID is the uid run's processes run as, seen from inside: the owner
// of its workspace in tier B (each run has its own), nobody in tier C
// (the uid inside its user namespace).
func (e *ledgerEnv) runUID(t *testing.T, runID string) int {
	t.Helper()
	if e.tier == "C" {
		return nobody
	}
	uid, _ := owner(t, e.workspace(t, runID))
	return uid
}

// own gives path in run's workspace to the workspace's owner, as a file
// the run's program made would be.
func (e *ledgerEnv) own(t *testing.T, runID, path string) {
	t.Helper()
	uid, gid := owner(t, e.workspace(t, runID))
	if err := os.Lchown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// plant writes a file into run's workspace and returns its name there.
func (e *ledgerEnv) plant(t *testing.T, runID, name, content string) string {
	t.Helper()
	p := filepath.Join(e.workspace(t, runID), name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for d := p; d != filepath.Join(e.root, e2ePrincipal, runID); d = filepath.Dir(d) {
		e.own(t, runID, d)
	}
	return name
}

// sh plants body as a script and runs it with sh (a policy allowing
// interpreters is needed).
func (e *ledgerEnv) sh(t *testing.T, runID, body string) request {
	t.Helper()
	return e.run(t, runID, cmd("sh", e.plant(t, runID, "s-"+randomHex(t, 4)+".sh", body)))
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// marker returns a sleep duration no other process on the machine has on
// its command line, to find a test's processes in /proc.
func marker(t *testing.T) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(899_999_999))
	if err != nil {
		t.Fatal(err)
	}
	s := strconv.FormatInt(n.Int64()+100_000_000, 10)
	return s[:6] + "." + s[6:]
}

// procsWith lists the host's processes one of whose arguments is m, whole:
// a process of the machine's own whose command line merely contains m's
// digits is not counted (the internal tests' survivors does the same).
func procsWith(m string) []string {
	var out []string
	want := "\x00" + m + "\x00"
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains("\x00"+string(b), want) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// noSurvivors fails t if a process with one of the markers is alive once
// the request is final. A process the kernel is still tearing down at that
// moment may linger (for seconds, on a busy machine); one still there
// 30 s later outlived its request.
func noSurvivors(t *testing.T, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		for _, m := range markers {
			left = append(left, procsWith(m)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes outlived their request: %q", left)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls until cond holds; what names the condition in the failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(awaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, awaitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statuses parses probe lines "label: status" into a map.
func statuses(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if i := strings.LastIndex(line, ": "); i > 0 {
			m[line[:i]] = line[i+2:]
		}
	}
	return m
}

// expectStatuses fails t for each label whose status is not want.
func expectStatuses(t *testing.T, o procOutput, want string, labels ...string) {
	t.Helper()
	got := statuses(o.Stdout)
	for _, l := range labels {
		if got[l] != want {
			t.Errorf("%s: %q, want %q (stdout %q, stderr %q)", l, got[l], want, o.Stdout, o.Stderr)
		}
	}
}

// trap accepts connections on a host address and counts them: a probe
// that reached it shows up even if the probe's own report lies.
type trap struct {
	ln   net.Listener
	hits atomic.Int32
}

func newTrap(t *testing.T, network, addr string) *trap {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

func (tr *trap) port() int { return tr.ln.Addr().(*net.TCPAddr).Port }

func (tr *trap) expectUntouched(t *testing.T, what string) {
	t.Helper()
	if n := tr.hits.Load(); n != 0 {
		t.Errorf("%s: the sandbox connected %d times to %s", what, n, tr.ln.Addr())
	}
}

// hostProcess starts sleep m on the host as uid (0: the test's own) with
// an empty environment, and kills it when t ends. exited reports whether
// it has ended.
func hostProcess(t *testing.T, m string, uid uint32) (pid int, exited func() bool) {
	t.Helper()
	c := exec.Command("sleep", m)
	c.Env = []string{}
	if uid != 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	go func() {
		_ = c.Wait()
		done.Store(true)
	}()
	t.Cleanup(func() { _ = c.Process.Kill() })
	return c.Process.Pid, done.Load
}

// confinementProbe prints the process's credentials and confinement as
// "label: value" lines.
const confinementProbe = `echo "uid: $(id -u)"
grep -E '^(NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status | tr -d '\t' | sed 's/:/: /'
`

// expectConfined checks confinementProbe's lines: the run's unprivileged
// uid, no new privileges, the seccomp filter, and no capabilities (no
// bounding set either in tier C, which drops them all).
func expectConfined(t *testing.T, e *ledgerEnv, runID string, o procOutput) {
	t.Helper()
	tier := e.tier
	uid := e.runUID(t, runID)
	if uid == 0 || (tier == "B" && uid == os.Geteuid()) {
		t.Errorf("run %s runs as uid %d, the daemon's or root", runID, uid)
	}
	got := statuses(o.Stdout)
	want := map[string]string{"uid": strconv.Itoa(uid), "NoNewPrivs": "1", "Seccomp": "2",
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapAmb": "0000000000000000"}
	if tier == "C" {
		want["CapBnd"] = "0000000000000000"
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (stdout %q, stderr %q)", k, got[k], v, o.Stdout, o.Stderr)
		}
	}
}

// eachTier runs f for tier B and tier C in parallel subtests.
func eachTier(t *testing.T, f func(t *testing.T, tier string)) {
	t.Helper()
	for _, tier := range e2eTiers {
		t.Run("tier_"+tier, func(t *testing.T) {
			t.Parallel()
			f(t, tier)
		})
	}
}

// TestLedgerRunsInTier: an allowlisted program runs through ledger.submit
// and its result, enforcement and usage are recorded. args[0] equal to the
// command's name is dropped (Palyra's normalisation).
func TestLedgerRunsInTier(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: restrictedPolicy()})
		r := e.run(t, "", cmd("echo", "echo", "hello", "ledger"))
		o := succeeded(t, r)
		if o.Stdout != "hello ledger\n" || o.Stderr != "" || o.ExitCode != 0 || o.Tier != tier || o.StdoutTruncated {
			t.Errorf("output %s", r.Output)
		}
		if r.Tier != tier {
			t.Errorf("ledger.requests tier %q, want %q", r.Tier, tier)
		}
		want := "tool.requested request.decided execution.completed"
		if got := e.eventTypes(t, r.ID); got != want {
			t.Errorf("events %q, want %q", got, want)
		}
		f := e.finished(t, r.ID)
		label := map[string]string{"B": "sandbox_tier_b", "C": "sandbox_tier_c_linux_bubblewrap"}[tier]
		if f.Executor != label || f.Tier != tier || f.State != "succeeded" || f.ExitStatus == nil || *f.ExitStatus != 0 || f.TimedOut {
			t.Errorf("execution.finished: executor %q tier %q state %q exit %v timed out %v", f.Executor, f.Tier, f.State, f.ExitStatus, f.TimedOut)
		}
		for _, k := range []string{"wall_ms", "cpu_user_ms", "cpu_sys_ms", "max_rss_kb", "output_bytes"} {
			if _, ok := f.Resources[k]; !ok {
				t.Errorf("resources lack %s: %v", k, f.Resources)
			}
		}
		if f.Resources["output_bytes"] != int64(len("hello ledger\n")) {
			t.Errorf("output_bytes %d", f.Resources["output_bytes"])
		}
		enf := f.Enforcement
		sc, _ := enf["seccomp"].(map[string]any)
		if enf["no_new_privs"] != true || sc == nil || sc["allow_inet"] != false {
			t.Errorf("enforcement %v", enf)
		}
		if uid := e.runUID(t, "_req-"+r.ID.String()); enf["uid"] != float64(uid) || uid == 0 {
			t.Errorf("enforcement uid %v, want the run's unprivileged uid %d", enf["uid"], uid)
		}
		env, _ := json.Marshal(enf["env"])
		if string(env) != `["PATH","LANG","LC_ALL","HOME"]` && string(env) != `["HOME","LANG","LC_ALL","PATH"]` {
			t.Errorf("enforcement env %s, want PATH, LANG, LC_ALL and HOME only", env)
		}
		if tier == "C" {
			ns, _ := json.Marshal(enf["namespaces"])
			for _, n := range []string{"user", "pid", "mount", "ipc", "uts", "cgroup", "net"} {
				if !strings.Contains(string(ns), `"`+n+`"`) {
					t.Errorf("namespaces %s lack %s", ns, n)
				}
			}
			if enf["cap_drop"] != "ALL" || enf["disable_userns"] != true || !strings.HasPrefix(fmt.Sprint(enf["network"]), "none") {
				t.Errorf("enforcement %v", enf)
			}
		} else if enf["child_subreaper"] != true || enf["limits"] == nil {
			t.Errorf("enforcement %v", enf)
		}
	})
}

// refusal is a request the checks before the spawn refuse: whether the
// database's input check, the executor's or the tool's own (its Prepare,
// at claim time), the request ends denied and nothing starts.
type refusal struct {
	name  string
	open  bool // run under openPolicy instead of restrictedPolicy
	input any
	kind  ledger.ErrorKind
}

func refusals() []refusal {
	manyArgs := make([]string, 129)
	for i := range manyArgs {
		manyArgs[i] = "a"
	}
	bigArgs := make([]string, 40)
	for i := range bigArgs {
		bigArgs[i] = strings.Repeat("b", 4000)
	}
	inv, scope, capd, egress := ledger.KindInvalidInput, ledger.KindWorkspaceScopeDenied, ledger.KindCapabilityDenied, ledger.KindEgressDenied
	return []refusal{
		// Shape.
		{name: "command with slash", input: cmd("/bin/echo", "x"), kind: inv},
		{name: "command with backslash", input: cmd(`bin\echo`), kind: inv},
		{name: "command with whitespace", input: cmd("echo hi"), kind: inv},
		{name: "command with newline", input: cmd("echo\nid"), kind: inv},
		{name: "command of 257 bytes", input: cmd(strings.Repeat("e", 257)), kind: inv},
		{name: "empty command", input: cmd(""), kind: inv},
		{name: "129 args", input: cmd("echo", manyArgs...), kind: inv},
		{name: "arg of 4097 bytes", input: cmd("echo", strings.Repeat("a", 4097)), kind: inv},
		{name: "timeout_ms 0", input: `{"command":"echo","args":["x"],"timeout_ms":0}`, kind: inv},
		{name: "timeout_ms negative", input: `{"command":"echo","args":["x"],"timeout_ms":-5}`, kind: inv},
		{name: "timeout_ms fraction", input: `{"command":"echo","args":["x"],"timeout_ms":1.5}`, kind: inv},
		{name: "timeout_ms string", input: `{"command":"echo","args":["x"],"timeout_ms":"30"}`, kind: inv},
		{name: "unknown field", input: `{"command":"echo","args":["x"],"shell":true}`, kind: inv},
		{name: "args not strings", input: `{"command":"echo","args":[1]}`, kind: inv},
		{name: "null arg", input: `{"command":"echo","args":[null]}`, kind: inv},
		{name: "input over 128 KiB", input: cmd("echo", bigArgs...), kind: inv},
		// Executable allowlist and interpreters.
		{name: "not allowlisted", input: cmd("chmod", "777", "x"), kind: capd},
		{name: "shell without AllowInterpreters", input: cmd("sh", "probe.sh"), kind: capd},
		{name: "perl without AllowInterpreters", input: cmd("perl", "probe.pl"), kind: capd},
		{name: "python3 without AllowInterpreters", input: cmd("python3", "probe.py"), kind: capd},
		{name: "sh -c", open: true, input: cmd("sh", "-c", "id"), kind: capd},
		{name: "bash -lc", open: true, input: cmd("bash", "-lc", "id"), kind: capd},
		{name: "bash --command", open: true, input: cmd("bash", "--command", "id"), kind: capd},
		{name: "python3 -c", open: true, input: cmd("python3", "-c", "print(1)"), kind: capd},
		{name: "node --eval", open: true, input: cmd("node", "--eval", "1"), kind: capd},
		{name: "interpreter script outside the workspace", open: true, input: cmd("sh", "/etc/profile"), kind: scope},
		{name: "interpreter code naming a host path", open: true, input: cmd("perl", "-e", "open(F, '/etc/shadow')"), kind: scope},
		// Name- and group-based kills, even when allowlisted or "*".
		{name: "pkill", input: cmd("pkill", "sleep"), kind: capd},
		{name: "killall", input: cmd("killall", "sleep"), kind: capd},
		{name: "pkill under *", open: true, input: cmd("pkill", "-9", "execledger"), kind: capd},
		{name: "kill -1", input: cmd("kill", "-9", "-1"), kind: capd},
		{name: "kill 0", input: cmd("kill", "0"), kind: capd},
		// Allowlisted programs that start other programs (Palyra gap 1).
		{name: "find -exec sh", input: cmd("find", ".", "-exec", "sh", "probe.sh", ";"), kind: capd},
		{name: "find -execdir", input: cmd("find", ".", "-execdir", "id", ";"), kind: capd},
		{name: "xargs sh", input: cmd("xargs", "-a", "list.txt", "sh"), kind: capd},
		{name: "env sh", input: cmd("env", "sh", "probe.sh"), kind: capd},
		{name: "env -S", input: cmd("env", "-S", "sh probe.sh"), kind: capd},
		{name: "git -c core.pager", input: cmd("git", "-c", "core.pager=sh probe.sh", "log"), kind: capd},
		{name: "git -c alias", input: cmd("git", "-c", "alias.x=!sh probe.sh", "x"), kind: capd},
		{name: "make SHELL=", input: cmd("make", "SHELL=./probe.sh"), kind: capd},
		{name: "make --eval", input: cmd("make", "--eval=all:;@id"), kind: capd},
		{name: "awk system()", input: cmd("awk", `BEGIN{system("id")}`), kind: capd},
		{name: "sed e command", input: cmd("sed", "-n", "1e id", "list.txt"), kind: capd},
		{name: "tar --to-command", input: cmd("tar", "-xf", "a.tar", "--to-command=sh"), kind: capd},
		{name: "setsid", input: cmd("setsid", "sleep", "1"), kind: capd},
		{name: "nohup", input: cmd("nohup", "sleep", "1"), kind: capd},
		{name: "timeout", input: cmd("timeout", "5", "sh", "probe.sh"), kind: capd},
		// With interpreters allowed, the program a launcher starts gets the
		// same eval-flag rules as the command (the black-box findings).
		{name: "find -exec sh -c, interpreters allowed", open: true, input: cmd("find", ".", "-maxdepth", "0", "-exec", "sh", "-c", "id", ";"), kind: capd},
		{name: "find -execdir sh -c, interpreters allowed", open: true, input: cmd("find", ".", "-maxdepth", "0", "-execdir", "sh", "-c", "id", ";"), kind: capd},
		{name: "find -exec python3 -c, interpreters allowed", open: true, input: cmd("find", ".", "-maxdepth", "0", "-exec", "python3", "-c", "print(1)", ";"), kind: capd},
		{name: "env sh -c, interpreters allowed", open: true, input: cmd("env", "sh", "-c", "id"), kind: capd},
		{name: "env -S, interpreters allowed", open: true, input: cmd("env", "-S", "sh -c id"), kind: capd},
		{name: "xargs sh -c, interpreters allowed", open: true, input: cmd("xargs", "-a", "list.txt", "sh", "-c", "id"), kind: capd},
		{name: "timeout sh -c, interpreters allowed", open: true, input: cmd("timeout", "5", "sh", "-c", "id"), kind: capd},
		{name: "nohup sh -c, interpreters allowed", open: true, input: cmd("nohup", "sh", "-c", "id"), kind: capd},
		{name: "setsid -w sh -c, interpreters allowed", open: true, input: cmd("setsid", "-w", "sh", "-c", "id"), kind: capd},
		{name: "nested launchers, interpreters allowed", open: true, input: cmd("env", "timeout", "5", "env", "sh", "-c", "id"), kind: capd},
		// Workspace scope.
		{name: "dot dot", input: cmd("cat", "../x"), kind: scope},
		{name: "nested dot dot", input: cmd("cat", "sub/../../x"), kind: scope},
		{name: "absolute path outside", input: cmd("cat", "/etc/passwd"), kind: scope},
		{name: "symlink pointing outside", input: cmd("cat", "link-out"), kind: scope},
		{name: "dangling symlink", input: cmd("touch", "link-dangling"), kind: scope},
		{name: "file URL outside", input: cmd("cat", "file:///etc/passwd"), kind: scope},
		{name: "file URL with remote host", input: cmd("cat", "file://evil.example/etc/passwd"), kind: scope},
		{name: "option=value outside", input: cmd("cat", "--x=/etc/passwd"), kind: scope},
		{name: "-Cvalue outside", input: cmd("make", "-C/etc"), kind: scope},
		{name: "name=value outside", input: cmd("dd", "if=/etc/shadow"), kind: scope},
		{name: "cwd outside", input: map[string]any{"command": "ls", "args": []string{}, "cwd": "/etc"}, kind: scope},
		{name: "--cwd outside", input: cmd("ls", "--cwd", "/etc"), kind: scope},
		{name: "cwd with dot dot", input: map[string]any{"command": "ls", "args": []string{}, "cwd": "../.."}, kind: scope},
		// Egress (preflight, allowlist allowed.example).
		{name: "declared host not allowlisted", input: map[string]any{"command": "echo", "args": []string{"x"}, "requested_egress_hosts": []string{"evil.example"}}, kind: egress},
		{name: "URL argument not allowlisted", input: cmd("echo", "https://evil.example/x"), kind: egress},
		{name: "suffix without label boundary", input: cmd("echo", "https://evilallowed.example/x"), kind: egress},
		{name: "host= argument", input: cmd("echo", "host=evil.example"), kind: egress},
	}
}

// TestLedgerRefusals: requests the checks refuse end with the right state
// and error_kind, and no process starts.
func TestLedgerRefusals(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		envs := map[bool]*ledgerEnv{
			false: newLedgerEnv(t, tier, envConfig{policy: restrictedPolicy()}),
			true:  newLedgerEnv(t, tier, envConfig{policy: openPolicy()}),
		}
		for _, e := range envs {
			e.plant(t, "refusals", "probe.sh", "id\n")
			e.plant(t, "refusals", "list.txt", "probe.sh\n")
			ws := e.workspace(t, "refusals")
			if err := os.Symlink("/etc/passwd", filepath.Join(ws, "link-out")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/tmp/execledger-e2e-dangling-"+randomHex(t, 4), filepath.Join(ws, "link-dangling")); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range refusals() {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := envs[c.open]
				r := e.run(t, "refusals", c.input)
				if r.State != string(ledger.StateDenied) || r.ErrorKind != string(c.kind) || r.Error == "" {
					t.Fatalf("state %s, error_kind %q (%s), want denied %s", r.State, r.ErrorKind, r.Error, c.kind)
				}
				if e.startedOrCharged(t, r.ID) {
					t.Errorf("a denied request started or was charged: %s", e.eventTypes(t, r.ID))
				}
			})
		}
	})
}

// TestLedgerRefusalConsumesNoBudget: process.run's own checks run at
// claim time, before the run's budget is charged, so a call they refuse
// (here a path outside the workspace) costs its run nothing: in a run with
// a budget of one call, the call after it still runs.
func TestLedgerRefusalConsumesNoBudget(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: restrictedPolicy()})
		if _, err := e.submitter.Exec(context.Background(), "SELECT ledger.set_run_budget('one-call', 1)"); err != nil {
			t.Fatal(err)
		}
		r := e.run(t, "one-call", cmd("cat", "/etc/passwd"))
		if r.State != string(ledger.StateDenied) || r.ErrorKind != string(ledger.KindWorkspaceScopeDenied) {
			t.Fatalf("outside the workspace: %s %s (%s), want denied workspace_scope_denied", r.State, r.ErrorKind, r.Error)
		}
		if e.startedOrCharged(t, r.ID) {
			t.Errorf("the refused call was charged or started: %s", e.eventTypes(t, r.ID))
		}
		var decided struct {
			Stage      string `json:"stage"`
			ReasonCode string `json:"reason_code"`
			ToolReason string `json:"tool_reason"`
		}
		for _, ev := range e.events(t, r.ID) {
			if ev.Type == "request.decided" {
				if err := json.Unmarshal(ev.Payload, &decided); err != nil {
					t.Fatal(err)
				}
			}
		}
		if decided.Stage != "input" || decided.ReasonCode != "tool.workspace_scope_denied" || decided.ToolReason != procinput.ReasonPathEscape {
			t.Errorf("request.decided: %+v", decided)
		}
		if ok := e.run(t, "one-call", cmd("echo", "paid")); ok.State != string(ledger.StateSucceeded) {
			t.Fatalf("the run's one call after the refusal: %s %s (%s)", ok.State, ok.ErrorKind, ok.Error)
		}
		if over := e.run(t, "one-call", cmd("echo", "over")); over.ErrorKind != string(ledger.KindBudgetExhausted) {
			t.Fatalf("a second paid call: %s %s, want budget_exhausted", over.State, over.ErrorKind)
		}
	})
}

// TestLedgerNULNeverReachesTheExecutor: an argument or command with a NUL
// byte is refused by ledger.submit itself (jsonb has no NUL), so nothing
// is recorded and no program could receive it.
func TestLedgerNULNeverReachesTheExecutor(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	sub := db.LoginRole(t, e2ePrincipal, "ledger_submitter")
	e := &ledgerEnv{submitter: sub.Pool}
	for _, input := range []string{
		`{"command":"cat","args":["x\u0000/etc/passwd"]}`,
		`{"command":"ca\u0000t","args":[]}`,
		`{"command":"ls","args":[],"cwd":"a\u0000b"}`,
	} {
		_, err := e.trySubmit("", input)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22P05" {
			t.Errorf("submit %s: %v, want SQLSTATE 22P05", input, err)
		}
	}
	var n int
	if err := sub.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.requests").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d requests recorded", n)
	}
}

// TestLedgerArgumentsReachTheProgramVerbatim: arguments are checked, never
// rewritten (Palyra gap 6), and no shell interprets them.
func TestLedgerArgumentsReachTheProgramVerbatim(t *testing.T) {
	t.Parallel()
	args := []string{"https://example.com/a/b?c=d&e=f", "host:8080", "--opt=value", "key=value with spaces", "./sub/file",
		"ünïcødé", "*", "$HOME", "`id`", "$(id)", ";", "a\tb", "'quoted'", `"double"`, "-"}
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		o := succeeded(t, e.run(t, "verbatim", cmd("printf", append([]string{"%s|"}, args...)...)))
		if want := strings.Join(args, "|") + "|"; o.Stdout != want {
			t.Errorf("stdout %q, want %q", o.Stdout, want)
		}
	})
}

// TestLedgerCwd: a cwd inside the workspace, as a field or as a leading
// --cwd argument (Palyra's normalisation), is where the program starts.
func TestLedgerCwd(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		e.plant(t, "cwd", "sub/inner.txt", "x")
		for name, input := range map[string]any{
			"field":          map[string]any{"command": "ls", "args": []string{}, "cwd": "sub"},
			"leading --cwd":  cmd("ls", "--cwd", "sub"),
			"leading --cwd=": cmd("ls", "--cwd=sub"),
		} {
			t.Run(name, func(t *testing.T) {
				if o := succeeded(t, e.run(t, "cwd", input)); o.Stdout != "inner.txt\n" {
					t.Errorf("stdout %q, want the listing of sub", o.Stdout)
				}
			})
		}
	})
}

// TestLedgerStrictEgress: strict egress fails closed in tier B; in tier C
// a request that declares no host runs offline, and one that declares a
// host off the allowlist, or names a host it did not declare, is refused.
func TestLedgerStrictEgress(t *testing.T) {
	t.Parallel()
	pol := procinput.Policy{AllowedExecutables: []string{"echo"}, EgressMode: procinput.EgressStrict, EgressAllowlist: []string{"allowed.example"}}
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: pol})
		r := e.run(t, "", cmd("echo", "hi"))
		if tier == "B" {
			if r.State != "denied" || r.ErrorKind != string(ledger.KindEgressDenied) {
				t.Errorf("tier B strict: %s %q (%s), want denied egress_denied", r.State, r.ErrorKind, r.Error)
			}
			return
		}
		succeeded(t, r)
		if n := fmt.Sprint(e.finished(t, r.ID).Enforcement["network"]); !strings.HasPrefix(n, "none") {
			t.Errorf("network %q", n)
		}
		for _, in := range []any{
			map[string]any{"command": "echo", "args": []string{"hi"}, "requested_egress_hosts": []string{"evil.example"}},
			cmd("echo", "https://allowed.example/undeclared"),
		} {
			if r := e.run(t, "", in); r.State != "denied" || r.ErrorKind != string(ledger.KindEgressDenied) {
				t.Errorf("%v: %s %q (%s), want denied egress_denied", in, r.State, r.ErrorKind, r.Error)
			}
		}
	})
}

// TestLedgerDaemonSecretsStayOut: the daemon's environment (here, the test
// process's) never reaches a sandboxed process, neither in its own
// environment nor through /proc (Palyra gap 3). It sets environment
// variables, so it does not run in parallel with other tests.
func TestLedgerDaemonSecretsStayOut(t *testing.T) {
	secret := "el-e2e-daemon-s3cr3t-" + randomHex(t, 8)
	t.Setenv("EXECLEDGER_E2E_SECRET", secret)
	t.Setenv("PGPASSWORD", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		o := succeeded(t, e.run(t, "env", cmd("env")))
		var names []string
		for _, kv := range strings.Split(strings.TrimSpace(o.Stdout), "\n") {
			// bwrap's --chdir sets PWD to the sandbox's own /workspace.
			if tier == "C" && kv == "PWD=/workspace" {
				continue
			}
			k, _, _ := strings.Cut(kv, "=")
			names = append(names, k)
		}
		if strings.Join(names, " ") != "PATH LANG LC_ALL HOME" {
			t.Errorf("environment %q, want PATH, LANG, LC_ALL and HOME only", o.Stdout)
		}
		// Every environment the process can read through /proc.
		o = succeeded(t, e.sh(t, "env", `for f in /proc/[0-9]*/environ /proc/self/task/*/environ; do
  tr '\0' '\n' < "$f" 2>/dev/null
done
echo swept: done
`))
		if strings.Contains(o.Stdout+o.Stderr, secret) || !strings.Contains(o.Stdout, "swept: done") {
			t.Errorf("the daemon's secret reached the sandbox, or the sweep did not run: %q", o.Stdout)
		}
	})
}

// launcherProbe plants a probe that reports its confinement and leaves a
// detached sleeper behind, and returns the probe's name and the marker.
func launcherProbe(t *testing.T, e *ledgerEnv, runID string) (name, m string) {
	t.Helper()
	m = marker(t)
	name = e.plant(t, runID, "probe-"+randomHex(t, 4)+".sh",
		confinementProbe+"setsid sleep "+m+" >/dev/null 2>&1 &\necho launched: yes\n")
	return name, m
}

// TestLedgerLaunchersStayConfined: allowlisted programs that start shells
// (Palyra gap 1). Their launch forms are refused in TestLedgerRefusals;
// the forms no argument check can see (a Makefile or a git alias in the
// workspace), and all of them where the policy allows launchers, start a
// shell that is still confined: the sandbox uid, no_new_privs, seccomp, no
// capabilities, and nothing outlives the request.
func TestLedgerLaunchersStayConfined(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		restricted := newLedgerEnv(t, tier, envConfig{policy: restrictedPolicy()})
		open := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		cases := []struct {
			name    string
			env     *ledgerEnv
			program string
			input   func(runID, probe string) any
		}{
			{"make with a planted Makefile", restricted, "make", func(runID, probe string) any {
				restricted.plant(t, runID, "Makefile", "all:\n\t@sh "+probe+"\n")
				return cmd("make", "-s")
			}},
			{"git with a planted alias", restricted, "git", func(runID, probe string) any {
				restricted.plant(t, runID, ".git/HEAD", "ref: refs/heads/main\n")
				restricted.plant(t, runID, ".git/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[alias]\n\tprobe = !sh "+probe+"\n")
				restricted.plant(t, runID, ".git/objects/.keep", "")
				restricted.plant(t, runID, ".git/refs/heads/.keep", "")
				return cmd("git", "probe")
			}},
			{"find -exec sh", open, "find", func(runID, probe string) any {
				return cmd("find", ".", "-name", probe, "-exec", "sh", "{}", ";")
			}},
			{"xargs sh", open, "xargs", func(runID, probe string) any {
				open.plant(t, runID, "list.txt", probe+"\n")
				return cmd("xargs", "-a", "list.txt", "sh")
			}},
			{"env sh", open, "env", func(runID, probe string) any {
				return cmd("env", "sh", probe)
			}},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				if _, err := exec.LookPath(c.program); err != nil {
					t.Fatalf("%s is not installed on this host (scripts/ensure-test-deps.sh installs it)", c.program)
				}
				runID := fmt.Sprintf("launcher-%d", i)
				probe, m := launcherProbe(t, c.env, runID)
				o := succeeded(t, c.env.run(t, runID, c.input(runID, probe)))
				if statuses(o.Stdout)["launched"] != "yes" {
					t.Fatalf("the launched shell did not run: stdout %q, stderr %q", o.Stdout, o.Stderr)
				}
				expectConfined(t, c.env, runID, o)
				noSurvivors(t, m)
			})
		}
	})
}

// TestLedgerEscapesDoNotSurvive: processes that leave the process group
// (setsid, double fork, nohup), even one holding stdout open, end with
// their request; the request succeeds and is not held up by them.
func TestLedgerEscapesDoNotSurvive(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		m := []string{marker(t), marker(t), marker(t), marker(t), marker(t)}
		r := e.sh(t, "escape", fmt.Sprintf(`setsid sleep %s >/dev/null 2>&1 &
( ( sleep %s >/dev/null 2>&1 & ) & )
nohup sleep %s >/dev/null 2>&1 &
setsid -f sleep %s >/dev/null 2>&1
setsid sleep %s &
echo started: yes
`, m[0], m[1], m[2], m[3], m[4]))
		o := succeeded(t, r)
		if statuses(o.Stdout)["started"] != "yes" {
			t.Errorf("stdout %q, stderr %q", o.Stdout, o.Stderr)
		}
		noSurvivors(t, m...)
		// The sleepers were killed by the sandbox, not left to end: tier B's
		// init (descendants_killed) and its cgroup leaf (cgroup_procs_killed)
		// count what they killed. Not an exact count: a double-forking
		// subshell may be caught before or after it forks its sleeper, and
		// the process-group kill takes some without counting them.
		if f := e.finished(t, r.ID); tier == "B" && f.Resources["descendants_killed"]+f.Resources["cgroup_procs_killed"] < 1 {
			t.Errorf("resources %v: nothing was killed, yet %d sleepers escaped the shell", f.Resources, len(m))
		}
	})
}

// TestLedgerTimeout: a request past its timeout_ms ends timed_out with its
// whole tree gone and the output printed before the kill kept.
func TestLedgerTimeout(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		t.Run("tree killed", func(t *testing.T) {
			t.Parallel()
			m1, m2 := marker(t), marker(t)
			script := e.plant(t, "timeout", "tree.sh", fmt.Sprintf("echo before: timeout\nsetsid sleep %s >/dev/null 2>&1 &\nsleep %s\n", m1, m2))
			r := e.run(t, "timeout", map[string]any{"command": "sh", "args": []string{script}, "timeout_ms": 1000})
			if r.State != "failed" || r.ErrorKind != "timed_out" {
				t.Fatalf("state %s, error_kind %q (%s), want failed timed_out", r.State, r.ErrorKind, r.Error)
			}
			if o := output(t, r); statuses(o.Stdout)["before"] != "timeout" {
				t.Errorf("output before the timeout lost: %s", r.Output)
			}
			if f := e.finished(t, r.ID); !f.TimedOut {
				t.Errorf("execution.finished timed_out false")
			}
			noSurvivors(t, m1, m2)
		})
		t.Run("SIGTERM before SIGKILL", func(t *testing.T) {
			t.Parallel()
			m := marker(t)
			script := e.plant(t, "timeout", "term.sh", fmt.Sprintf("trap 'echo term: received; exit 7' TERM\necho ready: yes\nsleep %s &\nwait\n", m))
			r := e.run(t, "timeout", map[string]any{"command": "sh", "args": []string{script}, "timeout_ms": 1000})
			if r.ErrorKind != "timed_out" {
				t.Fatalf("state %s, error_kind %q (%s), want timed_out", r.State, r.ErrorKind, r.Error)
			}
			if o := output(t, r); statuses(o.Stdout)["term"] != "received" {
				t.Errorf("the program was not sent SIGTERM before SIGKILL: stdout %q", o.Stdout)
			}
			noSurvivors(t, m)
		})
	})
}

// TestLedgerCancel: ledger.cancel of a running request stops its whole
// tree and ends it cancelled.
func TestLedgerCancel(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		m1, m2 := marker(t), marker(t)
		script := e.plant(t, "cancel", "run.sh", fmt.Sprintf("setsid sleep %s >/dev/null 2>&1 &\nsleep %s\n", m1, m2))
		id := e.submit(t, "cancel", cmd("sh", script))
		waitFor(t, "the request's processes start", func() bool { return len(procsWith(m1)) > 0 && len(procsWith(m2)) > 0 })
		if s := e.get(t, id).State; s != "running" {
			t.Fatalf("state %s while its processes run", s)
		}
		var ok bool
		if err := e.submitter.QueryRow(context.Background(), "SELECT ledger.cancel($1, 'e2e test')", id).Scan(&ok); err != nil || !ok {
			t.Fatalf("ledger.cancel: %v %v", ok, err)
		}
		r := e.await(t, id)
		if r.State != "cancelled" || r.ErrorKind != "cancelled" {
			t.Errorf("state %s, error_kind %q (%s), want cancelled", r.State, r.ErrorKind, r.Error)
		}
		if types := e.eventTypes(t, id); !strings.Contains(types, "execution.finished request.cancelled attestation.signed") {
			t.Errorf("events %s", types)
		}
		noSurvivors(t, m1, m2)
	})
}

// TestLedgerOutput: stdout and stderr share one budget; past it the
// request fails quota_exceeded with the output so far kept and marked
// truncated (Palyra gap 7). Stored output is redacted, valid UTF-8 and
// valid JSON, readable as jsonb.
func TestLedgerOutput(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	eachTier(t, func(t *testing.T, tier string) {
		red := redact.New(redact.Options{})
		runSecret := "run-secret-" + randomHex(t, 12)
		if err := red.AddSecret(runSecret); err != nil {
			t.Fatal(err)
		}
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy(), outputLimit: limit, redactor: red})
		t.Run("stdout over quota", func(t *testing.T) {
			t.Parallel()
			m := "quota-" + randomHex(t, 6)
			r := e.run(t, "output", cmd("yes", m))
			if r.State != "failed" || r.ErrorKind != "quota_exceeded" {
				t.Fatalf("state %s, error_kind %q (%s), want failed quota_exceeded", r.State, r.ErrorKind, r.Error)
			}
			o := output(t, r)
			if len(o.Stdout)+len(o.Stderr) != limit || !o.StdoutTruncated || !strings.HasPrefix(o.Stdout, m+"\n"+m+"\n") {
				t.Errorf("kept %d+%d bytes, stdout_truncated %v, stdout starts %q", len(o.Stdout), len(o.Stderr), o.StdoutTruncated, o.Stdout[:min(40, len(o.Stdout))])
			}
			noSurvivors(t, m)
		})
		t.Run("stderr over quota", func(t *testing.T) {
			t.Parallel()
			m := "quota-" + randomHex(t, 6)
			r := e.sh(t, "output", "echo first: out\necho 'first: err' >&2\nyes "+m+" >&2\n")
			if r.ErrorKind != "quota_exceeded" {
				t.Fatalf("state %s, error_kind %q (%s), want quota_exceeded", r.State, r.ErrorKind, r.Error)
			}
			o := output(t, r)
			// The two pipes are read concurrently: when both are ready at
			// once, the stderr reader may spend the budget before the
			// stdout reader takes its line, which is then cut and marked.
			stdoutKept := o.Stdout == "first: out\n" && !o.StdoutTruncated
			stdoutCut := strings.HasPrefix("first: out\n", o.Stdout) && o.Stdout != "first: out\n" && o.StdoutTruncated
			if !(stdoutKept || stdoutCut) || !strings.HasPrefix(o.Stderr, "first: err\n"+m+"\n") || !o.StderrTruncated ||
				len(o.Stdout)+len(o.Stderr) != limit {
				t.Errorf("stdout %q, stderr starts %q (%d bytes), truncated %v/%v", o.Stdout, o.Stderr[:min(40, len(o.Stderr))], len(o.Stderr), o.StdoutTruncated, o.StderrTruncated)
			}
			noSurvivors(t, m)
		})
		t.Run("secrets redacted", func(t *testing.T) {
			t.Parallel()
			secrets := []string{"sk-live-" + randomHex(t, 12), "bearer-" + randomHex(t, 12), "urlpw-" + randomHex(t, 8), "pw-" + randomHex(t, 8), runSecret}
			r := e.sh(t, "output", fmt.Sprintf(`echo 'api_key=%s'
echo 'Authorization: Bearer %s'
echo 'postgres://app:%s@db.internal/ledger'
echo 'password: %s' >&2
echo 'the run secret is %s' >&2
exit 3
`, secrets[0], secrets[1], secrets[2], secrets[3], secrets[4]))
			if r.State != "failed" || r.ErrorKind != "runtime_failure" {
				t.Fatalf("state %s, error_kind %q (%s), want failed runtime_failure", r.State, r.ErrorKind, r.Error)
			}
			o := output(t, r)
			if o.ExitCode != 3 || !strings.Contains(o.Stdout, "<redacted>") || !strings.Contains(o.Stderr, "<redacted>") {
				t.Errorf("output %s", r.Output)
			}
			for _, s := range secrets {
				if strings.Contains(string(r.Output)+r.Error, s) {
					t.Errorf("ledger.requests holds secret %q: %s", s, r.Output)
				}
				for _, ev := range e.events(t, r.ID) {
					if strings.Contains(string(ev.Payload), s) {
						t.Errorf("event %s holds secret %q", ev.Type, s)
					}
				}
			}
		})
		t.Run("invalid UTF-8 and control characters", func(t *testing.T) {
			t.Parallel()
			r := e.run(t, "output", cmd("printf", `a\377\376b\001c\033[31m"<>&\\\r\n`))
			o := succeeded(t, r)
			want := "a\uFFFDb\x01c\x1b[31m\"<>&\\\r\n"
			if o.Stdout != want || !o.StdoutLossy {
				t.Errorf("stdout %q lossy %v, want %q", o.Stdout, o.StdoutLossy, want)
			}
			var viaSQL string
			if err := e.submitter.QueryRow(context.Background(), "SELECT output->>'stdout' FROM ledger.requests WHERE id = $1", r.ID).Scan(&viaSQL); err != nil || viaSQL != want {
				t.Errorf("output->>'stdout' %q (%v), want %q", viaSQL, err, want)
			}
			if !utf8.Valid(r.Output) || strings.ContainsAny(string(r.Output), "\x01\x1b\r") {
				t.Errorf("stored JSON holds raw control bytes: %q", r.Output)
			}
		})
	})
}

// TestLedgerOutputWithNUL: a program that prints a NUL byte still ends
// final with its output stored (jsonb cannot hold \u0000), and the
// executor goes on working. It has an executor of its own because a
// completion that cannot be stored may hold up the others of its batch.
func TestLedgerOutputWithNUL(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		r := e.run(t, "nul", cmd("printf", `x\000y`))
		if r.State != "succeeded" {
			t.Errorf("state %s, error_kind %q (%s), output %s; want succeeded", r.State, r.ErrorKind, r.Error, r.Output)
		} else if o := output(t, r); !strings.HasPrefix(o.Stdout, "x") || !strings.HasSuffix(o.Stdout, "y") || len(o.Stdout) < 3 {
			t.Errorf("stdout %q, want x, a stand-in for the NUL, y", o.Stdout)
		}
		if o := succeeded(t, e.run(t, "nul", cmd("echo", "after"))); o.Stdout != "after\n" {
			t.Errorf("the next request: %q", o.Stdout)
		}
	})
}

// pathProbe prints "path: VISIBLE" or "path: hidden" for each path, by
// whether the process can read it (a file) or list it (a directory).
func pathProbe(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "if [ -d '%[1]s' ]; then ls '%[1]s'; else cat '%[1]s'; fi >/dev/null 2>&1 && echo '%[1]s: VISIBLE' || echo '%[1]s: hidden'\n", p)
	}
	return b.String()
}

// existProbe prints "path: EXISTS" or "path: absent" for each path, by
// whether anything (a symlink included) is there.
func existProbe(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "if [ -e '%[1]s' ] || [ -L '%[1]s' ]; then echo '%[1]s: EXISTS'; else echo '%[1]s: absent'; fi\n", p)
	}
	return b.String()
}

// writeProbe prints "path: WRITTEN" or "path: refused" for each file it
// tries to create.
func writeProbe(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "if (echo x > '%[1]s') 2>/dev/null; then echo '%[1]s: WRITTEN'; else echo '%[1]s: refused'; fi\n", p)
	}
	return b.String()
}

// inetProbe is a bash script that tries each "tcp|udp host port" and
// prints "proto host port: CONNECTED" or "...: refused"; bash's own
// error messages go to stderr.
func inetProbe(targets ...string) string {
	var b strings.Builder
	b.WriteString(`probe() { if (exec 3<>"/dev/$1/$2/$3"); then echo "$1 $2 $3: CONNECTED"; else echo "$1 $2 $3: refused"; fi; }` + "\n")
	for _, tg := range targets {
		b.WriteString("probe " + tg + "\n")
	}
	return b.String()
}

// unixProbe is a perl script that connects to each Unix socket address
// (a leading "@" is the abstract namespace; "login PATH" also attempts a
// PostgreSQL login) and prints "label: CONNECTED" or "label: refused".
// It first connects to a socket of its own, "own socket", which must
// succeed for the other lines to mean anything.
func unixProbe(labels, addrs []string) string {
	var b strings.Builder
	b.WriteString(`use strict; use warnings; use Socket; $| = 1;
sub probe {
    my ($label, $addr) = @_;
    my $s;
    if (!socket($s, AF_UNIX, SOCK_STREAM, 0)) { print "$label: refused\n"; print STDERR "$label: socket: $!\n"; return; }
    if (connect($s, pack_sockaddr_un($addr))) { print "$label: CONNECTED\n"; } else { print "$label: refused\n"; print STDERR "$label: $!\n"; }
    close($s);
}
# pglogin sends a PostgreSQL startup message as user postgres and reports
# whether the server answers AuthenticationOk.
sub pglogin {
    my ($label, $path) = @_;
    my $s;
    if (!socket($s, AF_UNIX, SOCK_STREAM, 0) || !connect($s, pack_sockaddr_un($path))) { print "$label: refused\n"; return; }
    my $params = "user\0postgres\0database\0postgres\0\0";
    syswrite($s, pack("NN", 8 + length($params), 196608) . $params);
    my $buf = '';
    sysread($s, $buf, 9);
    if (length($buf) == 9 && substr($buf, 0, 1) eq 'R' && unpack("N", substr($buf, 5, 4)) == 0) {
        print "$label: ACCEPTED\n";
        syswrite($s, "X" . pack("N", 4));
    } else {
        print "$label: refused\n";
    }
    close($s);
}
`)
	b.WriteString(`my $own = "own-$$.sock";
my $l;
socket($l, AF_UNIX, SOCK_STREAM, 0) && bind($l, pack_sockaddr_un($own)) && listen($l, 1) or print STDERR "own socket: $!\n";
probe("own socket", $own);
unlink $own;
`)
	for i, a := range addrs {
		if strings.HasPrefix(a, "login ") {
			fmt.Fprintf(&b, "pglogin(%q, %q);\n", labels[i], strings.TrimPrefix(a, "login "))
			continue
		}
		if strings.HasPrefix(a, "@") {
			fmt.Fprintf(&b, "probe(%q, \"\\0\" . %q);\n", labels[i], a[1:])
		} else {
			fmt.Fprintf(&b, "probe(%q, %q);\n", labels[i], a)
		}
	}
	return b.String()
}

// hostIPv4 returns an address of the host other than loopback, or "".
func hostIPv4() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// unixTraps listens on a Unix socket path any uid may connect to and on an
// abstract one, in the host's namespaces.
func unixTraps(t *testing.T) (path string, abstract string, traps []*trap) {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(dir, "host.sock")
	tp := newTrap(t, "unix", path)
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	abstract = "@execledger-e2e-" + randomHex(t, 6)
	return path, abstract, []*trap{tp, newTrap(t, "unix", abstract)}
}

// networkTargets lists the inet probes every tier must fail: a trap on all
// of the host's addresses (loopback, a public address, ::1 when the host
// has it) and PostgreSQL's port.
func networkTargets(t *testing.T) (targets []string, tr *trap) {
	t.Helper()
	tr = newTrap(t, "tcp", ":0")
	p := strconv.Itoa(tr.port())
	targets = []string{"tcp 127.0.0.1 " + p, "udp 127.0.0.1 " + p, "tcp 127.0.0.1 5432", "tcp localhost 5432"}
	if ip := hostIPv4(); ip != "" {
		targets = append(targets, "tcp "+ip+" "+p)
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		targets = append(targets, "tcp ::1 "+p)
	}
	return targets, tr
}

// TestLedgerTierCConfinement attacks a tier C process through the ledger:
// it cannot read the host's files outside its binds, write outside
// /workspace (its /tmp is its own), reach the network or a host Unix
// socket (PostgreSQL's included), see host processes, or gain privileges.
func TestLedgerTierCConfinement(t *testing.T) {
	t.Parallel()
	e := newLedgerEnv(t, "C", envConfig{policy: openPolicy()})
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("host files", func(t *testing.T) {
		t.Parallel()
		hostFile := filepath.Join(filepath.Dir(e.root), "host-file.txt")
		if err := os.WriteFile(hostFile, []byte("host"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths := []string{"/etc/shadow", "/etc/gshadow", "/root", "/home", "/var/lib/postgresql", "/etc/postgresql",
			"/var/run/postgresql", "/run", "/sys/fs/cgroup", "/boot", e.root, hostFile, cwd}
		o := succeeded(t, e.sh(t, "files", existProbe(append(paths, "/workspace", "/usr/bin/sh")...)+
			"echo \"users: $(cut -d: -f1 /etc/passwd | tr '\\n' ' ')\"\n"))
		expectStatuses(t, o, "EXISTS", "/workspace", "/usr/bin/sh")
		expectStatuses(t, o, "absent", paths...)
		if got := statuses(o.Stdout)["users"]; got != "sandbox " {
			t.Errorf("/etc/passwd lists %q, want only the generated sandbox user", got)
		}
	})
	t.Run("writes outside the workspace", func(t *testing.T) {
		t.Parallel()
		m := randomHex(t, 6)
		outside := []string{"/usr/e2e-" + m, "/etc/e2e-" + m, "/e2e-" + m, "/bin/e2e-" + m, "/var/e2e-" + m, "/proc/e2e-" + m,
			"/sys/e2e-" + m, "/usr/lib/e2e-" + m}
		inside := []string{"/workspace/e2e-" + m, "/tmp/e2e-" + m, "/dev/shm/e2e-" + m}
		o := succeeded(t, e.sh(t, "writes", writeProbe(outside...)+writeProbe(inside[:2]...)+writeProbe(inside[2])))
		expectStatuses(t, o, "refused", outside...)
		expectStatuses(t, o, "WRITTEN", inside[:2]...)
		for _, p := range append(outside, inside[1:]...) {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host", p)
				os.Remove(p)
			}
		}
		if _, err := os.Stat(filepath.Join(e.root, e2ePrincipal, "writes", "e2e-"+m)); err != nil {
			t.Errorf("the workspace write is not in the run's workspace: %v", err)
		}
	})
	t.Run("network", func(t *testing.T) {
		t.Parallel()
		targets, tr := networkTargets(t)
		script := e.plant(t, "network", "net.sh", inetProbe(targets...)+
			`echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"`+"\n")
		o := succeeded(t, e.run(t, "network", cmd("bash", script)))
		expectStatuses(t, o, "refused", targets...)
		if got := statuses(o.Stdout)["interfaces"]; got != "lo " {
			t.Errorf("interfaces %q, want lo only", got)
		}
		if !strings.Contains(o.Stderr, "Operation not permitted") {
			t.Errorf("inet sockets were not refused by seccomp: stderr %q", o.Stderr)
		}
		tr.expectUntouched(t, "inet")
	})
	t.Run("host Unix sockets", func(t *testing.T) {
		t.Parallel()
		path, abstract, traps := unixTraps(t)
		labels := []string{"postgres", "postgres via /run", "postgres superuser login", "host path", "host abstract"}
		script := e.plant(t, "unix", "unix.pl", unixProbe(labels, []string{"/var/run/postgresql/.s.PGSQL.5432", "/run/postgresql/.s.PGSQL.5432",
			"login /var/run/postgresql/.s.PGSQL.5432", path, abstract}))
		o := succeeded(t, e.run(t, "unix", cmd("perl", script)))
		expectStatuses(t, o, "CONNECTED", "own socket")
		expectStatuses(t, o, "refused", labels...)
		for _, tr := range traps {
			tr.expectUntouched(t, "unix")
		}
	})
	t.Run("host processes", func(t *testing.T) {
		t.Parallel()
		m := marker(t)
		hostPID, _ := hostProcess(t, m, 0)
		o := succeeded(t, e.sh(t, "procs", `for d in /proc/[0-9]*; do
  echo "pid ${d#/proc/}: $(tr '\0' ' ' < "$d/cmdline")"
done
if kill -0 `+strconv.Itoa(hostPID)+` 2>/dev/null; then echo "signal host: SENT"; else echo "signal host: refused"; fi
if kill -0 `+strconv.Itoa(os.Getpid())+` 2>/dev/null; then echo "signal daemon: SENT"; else echo "signal daemon: refused"; fi
`))
		if strings.Contains(o.Stdout, m) || strings.Contains(o.Stdout, "processrun.test") {
			t.Errorf("the sandbox sees host processes: %q", o.Stdout)
		}
		if n := strings.Count(o.Stdout, "pid "); n == 0 || n > 4 {
			t.Errorf("the sandbox sees %d processes, want its own few: %q", n, o.Stdout)
		}
		expectStatuses(t, o, "refused", "signal host", "signal daemon")
	})
	t.Run("privileges", func(t *testing.T) {
		t.Parallel()
		o := succeeded(t, e.sh(t, "privs", confinementProbe+privilegeProbe))
		expectConfined(t, e, "privs", o)
		expectStatuses(t, o, "refused", privilegeLabels...)
	})
}

// privilegeProbe tries to gain privileges: new namespaces, a mount, a
// chroot, and setuid-root programs (mount, su).
const privilegeProbe = `mkdir -p mnt
try() { label=$1; shift; if "$@" </dev/null >/dev/null 2>&1; then echo "$label: ALLOWED"; else echo "$label: refused"; fi; }
try "unshare user" unshare -U true
try "unshare root map" unshare -r true
try "unshare net" unshare -n true
try "unshare mount" unshare -m true
try "mount tmpfs" mount -t tmpfs none mnt
try "chroot" chroot / true
try "su root" su -c true root
`

var privilegeLabels = []string{"unshare user", "unshare root map", "unshare net", "unshare mount", "mount tmpfs", "chroot", "su root"}

// TestLedgerTierBConfinement attacks a tier B process through the ledger.
// Tier B shares the host's file system and network namespace: it runs as
// an unprivileged uid, under seccomp (no inet sockets, no namespaces) and
// rlimits. It cannot write outside its workspace, read what the daemon or
// other users keep private, open inet sockets, or gain privileges.
func TestLedgerTierBConfinement(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("tier B confinement runs the program as an unprivileged uid only when the daemon is root; run the tests as root")
	}
	e := newLedgerEnv(t, "B", envConfig{policy: openPolicy()})
	t.Run("system directories unwritable", func(t *testing.T) {
		t.Parallel()
		m := randomHex(t, 6)
		other := filepath.Join(e.root, "bob")
		if err := os.MkdirAll(other, 0o711); err != nil {
			t.Fatal(err)
		}
		outside := []string{"/etc/e2e-" + m, "/usr/e2e-" + m, "/usr/local/bin/e2e-" + m, "/root/e2e-" + m, "/var/lib/postgresql/e2e-" + m,
			"/e2e-" + m, filepath.Join(e.root, "e2e-"+m), filepath.Join(e.root, e2ePrincipal, "e2e-"+m), filepath.Join(other, "e2e-"+m)}
		ws := filepath.Join(e.root, e2ePrincipal, "writes")
		o := succeeded(t, e.sh(t, "writes", writeProbe(outside...)+writeProbe(filepath.Join(ws, "e2e-"+m))))
		expectStatuses(t, o, "refused", outside...)
		expectStatuses(t, o, "WRITTEN", filepath.Join(ws, "e2e-"+m))
		for _, p := range outside {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host", p)
				os.Remove(p)
			}
		}
	})
	t.Run("world-writable directories private", func(t *testing.T) {
		t.Parallel()
		m := randomHex(t, 6)
		// A file the host left in /tmp is invisible to the sandbox, and what
		// the sandbox writes there never reaches the host: each process has
		// its own tmpfs on /tmp, /var/tmp and /dev/shm.
		planted := "/tmp/e2e-host-" + m
		if err := os.WriteFile(planted, []byte("host"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(planted)
		outside := []string{"/tmp/e2e-" + m, "/var/tmp/e2e-" + m, "/dev/shm/e2e-" + m}
		o := succeeded(t, e.sh(t, "tmpwrites", writeProbe(outside...)+pathProbe(planted)))
		expectStatuses(t, o, "hidden", planted)
		for _, p := range outside {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s reached the host", p)
				os.Remove(p)
			}
		}
		expectStatuses(t, o, "WRITTEN", outside...)
	})
	t.Run("private files unreadable", func(t *testing.T) {
		t.Parallel()
		daemon := "/proc/" + strconv.Itoa(os.Getpid())
		paths := []string{"/etc/shadow", "/etc/gshadow", "/root", "/var/lib/postgresql/15/main", "/proc/1/environ",
			daemon + "/environ", daemon + "/mem", daemon + "/fd", daemon + "/root/", filepath.Join(e.root, e2ePrincipal)}
		o := succeeded(t, e.sh(t, "reads", pathProbe(paths...)))
		expectStatuses(t, o, "hidden", paths...)
	})
	t.Run("network", func(t *testing.T) {
		t.Parallel()
		targets, tr := networkTargets(t)
		script := e.plant(t, "network", "net.sh", inetProbe(targets...))
		o := succeeded(t, e.run(t, "network", cmd("bash", script)))
		expectStatuses(t, o, "refused", targets...)
		if !strings.Contains(o.Stderr, "Operation not permitted") {
			t.Errorf("inet sockets were not refused by seccomp: stderr %q", o.Stderr)
		}
		tr.expectUntouched(t, "inet")
	})
	t.Run("PostgreSQL's Unix socket", func(t *testing.T) {
		t.Parallel()
		labels := []string{"postgres", "postgres via /run", "postgres superuser login"}
		script := e.plant(t, "unix", "unix.pl", unixProbe(labels, []string{"/var/run/postgresql/.s.PGSQL.5432", "/run/postgresql/.s.PGSQL.5432",
			"login /var/run/postgresql/.s.PGSQL.5432"}))
		o := succeeded(t, e.run(t, "unix", cmd("perl", script)))
		// Tier B refuses socket(AF_UNIX) altogether, its own listener
		// included: the refusal comes from seccomp, not from the probe.
		expectStatuses(t, o, "refused", append(labels, "own socket")...)
		if !strings.Contains(o.Stderr, "socket: Operation not permitted") {
			t.Errorf("Unix sockets were not refused by seccomp: stderr %q", o.Stderr)
		}
	})
	t.Run("privileges", func(t *testing.T) {
		t.Parallel()
		o := succeeded(t, e.sh(t, "privs", confinementProbe+privilegeProbe))
		expectConfined(t, e, "privs", o)
		expectStatuses(t, o, "refused", privilegeLabels...)
	})
}

// limitsOf parses /proc/self/limits into "name" → "soft hard".
func limitsOf(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "Max ") || len(line) < 26 {
			continue
		}
		f := strings.Fields(line[26:])
		if len(f) >= 2 {
			m[strings.TrimSpace(line[:26])] = f[0] + " " + f[1]
		}
	}
	return m
}

// TestLedgerRlimits: the configured rlimits (beyond Palyra's CPU and
// address space: processes, open files, file size, no core) are in force,
// soft equal to hard, and a file cannot grow past the limit.
func TestLedgerRlimits(t *testing.T) {
	t.Parallel()
	limits := procinit.Limits{CPUSeconds: 7, FileSize: 1 << 20, OpenFiles: 77, Processes: 177}
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy(), limits: limits})
		t.Run("in force", func(t *testing.T) {
			t.Parallel()
			o := succeeded(t, e.sh(t, "limits", "cat /proc/self/limits\n"))
			got := limitsOf(o.Stdout)
			for name, v := range map[string]uint64{"Max cpu time": limits.CPUSeconds, "Max file size": limits.FileSize,
				"Max open files": limits.OpenFiles, "Max processes": limits.Processes, "Max core file size": 0} {
				if want := fmt.Sprintf("%d %d", v, v); got[name] != want {
					t.Errorf("%s: %q, want %q", name, got[name], want)
				}
			}
		})
		t.Run("file size enforced", func(t *testing.T) {
			t.Parallel()
			r := e.sh(t, "fsize", "head -c 3145728 /dev/zero > big.bin\necho \"head: $?\"\n")
			if r.ErrorKind != "" && r.ErrorKind != "runtime_failure" {
				t.Fatalf("state %s, error_kind %q (%s)", r.State, r.ErrorKind, r.Error)
			}
			fi, err := os.Stat(filepath.Join(e.root, e2ePrincipal, "fsize", "big.bin"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() > int64(limits.FileSize) {
				t.Errorf("big.bin grew to %d bytes past RLIMIT_FSIZE %d", fi.Size(), limits.FileSize)
			}
		})
	})
}

// TestLedgerLimitKills: a shell spinning until RLIMIT_CPU ends it is
// attested, in both tiers, with its own CPU time (about the limit, not
// bubblewrap's few milliseconds), the signal that ended it, and
// quota_exceeded naming the limit; a program that kills itself with the
// same signal, having used no CPU to speak of, is a runtime_failure.
func TestLedgerLimitKills(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy(), limits: procinit.Limits{CPUSeconds: 1, FileSize: 64 << 10}})
		t.Run("cpu", func(t *testing.T) {
			t.Parallel()
			r := e.sh(t, "cpu", "while :; do :; done\n")
			o := output(t, r)
			if r.State != "failed" || r.ErrorKind != "quota_exceeded" || o.LimitExceeded != "rlimit_cpu_seconds" ||
				!strings.Contains(r.Error, ": CPU limit of 1 s (rlimit_cpu_seconds) reached") {
				t.Errorf("state %s, %s: %s, output %s", r.State, r.ErrorKind, r.Error, r.Output)
			}
			if o.Signal != int(syscall.SIGKILL) && o.Signal != int(syscall.SIGXCPU) || o.ExitCode != 128+o.Signal {
				t.Errorf("exit %d signal %d, want SIGKILL (or SIGXCPU)", o.ExitCode, o.Signal)
			}
			p := e.attested(t, r.ID).Predicate
			// As in procinit's TestCPULimitKillsBusyLoop: rusage against
			// the limit's sampled ticks differ by a tenth or more.
			if cpu := p.Resources["cpu_user_ms"] + p.Resources["cpu_sys_ms"]; cpu < 500 {
				t.Errorf("attested %d ms of CPU (%v) for a 1 s CPU limit", cpu, p.Resources)
			}
			if p.ErrorKind != "quota_exceeded" || p.Success || p.ExitStatus == nil || *p.ExitStatus != o.ExitCode {
				exit := "none"
				if p.ExitStatus != nil {
					exit = strconv.Itoa(*p.ExitStatus)
				}
				t.Errorf("attested error kind %q success %v exit status %s", p.ErrorKind, p.Success, exit)
			}
		})
		t.Run("file size", func(t *testing.T) {
			t.Parallel()
			r := e.sh(t, "fsize", "exec dd if=/dev/zero of=big bs=1024 count=200\n")
			o := output(t, r)
			if r.ErrorKind != "quota_exceeded" || o.LimitExceeded != "rlimit_file_size" || o.Signal != int(syscall.SIGXFSZ) ||
				!strings.Contains(r.Error, "killed by SIGXFSZ: file size limit of 65536 bytes (rlimit_file_size) reached") {
				t.Errorf("%s: %s, output %s", r.ErrorKind, r.Error, r.Output)
			}
		})
		t.Run("self-inflicted SIGKILL", func(t *testing.T) {
			t.Parallel()
			r := e.sh(t, "kill", "kill -KILL $$\n")
			o := output(t, r)
			if r.ErrorKind != "runtime_failure" || o.LimitExceeded != "" || o.Signal != int(syscall.SIGKILL) {
				t.Errorf("%s: %s, output %s", r.ErrorKind, r.Error, r.Output)
			}
		})
	})
}

// TestLedgerForkBombBounded: a process that forks until refused is
// stopped by RLIMIT_NPROC and its request ends with nothing left behind.
// It does not run in parallel: RLIMIT_NPROC counts every process of a
// uid on the machine, and the executors of concurrent tests hand out the
// same uids, so it would starve their runs.
func TestLedgerForkBombBounded(t *testing.T) {
	const processes, attempts = 32, 200
	for _, tier := range e2eTiers {
		t.Run("tier_"+tier, func(t *testing.T) {
			e := newLedgerEnv(t, tier, envConfig{policy: openPolicy(),
				limits: procinit.Limits{CPUSeconds: 2, FileSize: 1 << 20, OpenFiles: 64, Processes: processes}})
			m := marker(t)
			r := e.sh(t, "bomb", fmt.Sprintf(`n=0
while [ "$n" -lt %d ]; do
  sleep %s &
  n=$((n+1))
  echo "forked: $n"
done
echo "limit: never reached"
`, attempts, m))
			if r.ErrorKind != "" && r.ErrorKind != "runtime_failure" {
				t.Fatalf("state %s, error_kind %q (%s)", r.State, r.ErrorKind, r.Error)
			}
			o := output(t, r)
			n, _ := strconv.Atoi(statuses(o.Stdout)["forked"])
			if statuses(o.Stdout)["limit"] != "" || n > processes {
				t.Errorf("forked %d processes past RLIMIT_NPROC %d (stderr %q)", n, processes, o.Stderr)
			}
			noSurvivors(t, m)
		})
	}
}

// sleeperPID returns the pid of the host process running "sleep m", or 0.
func sleeperPID(m string) int {
	for _, p := range procsWith(m) {
		pid, cmdline, _ := strings.Cut(p, ": ")
		if strings.HasPrefix(cmdline, "sleep "+m) || strings.HasPrefix(cmdline, "/usr/bin/sleep "+m) || strings.HasPrefix(cmdline, "/bin/sleep "+m) {
			n, _ := strconv.Atoi(pid)
			return n
		}
	}
	return 0
}

// TestLedgerForeignPids: a sandboxed process cannot signal the daemon, a
// host process of root or of nobody, or another run's process (Palyra
// gap 4, through process.run; process.stop and process.status are covered
// by the background tests).
func TestLedgerForeignPids(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		rootPID, rootExited := hostProcess(t, marker(t), 0)
		nobodyPID, nobodyExited := hostProcess(t, marker(t), nobody)
		peer := marker(t)
		peerID := e.submit(t, "run-b", cmd("sleep", peer))
		waitFor(t, "run-b's sleep starts", func() bool { return sleeperPID(peer) != 0 })
		peerPID := sleeperPID(peer)
		targets := map[string]int{"daemon": os.Getpid(), "root process": rootPID, "nobody process": nobodyPID, "process of another run": peerPID}
		// The run's own sleeper shows that kill works in the sandbox.
		var script strings.Builder
		fmt.Fprintf(&script, "sleep %s &\nif kill -9 $! 2>/dev/null; then echo 'own process: KILLED'; else echo 'own process: refused'; fi\n", marker(t))
		for label, pid := range targets {
			fmt.Fprintf(&script, "if kill -9 %d 2>/dev/null; then echo '%s: KILLED'; else echo '%s: refused'; fi\n", pid, label, label)
		}
		o := succeeded(t, e.sh(t, "run-a", script.String()))
		expectStatuses(t, o, "KILLED", "own process")
		alive := map[string]func() bool{
			"daemon":                 func() bool { return true },
			"root process":           func() bool { return !rootExited() },
			"nobody process":         func() bool { return !nobodyExited() },
			"process of another run": func() bool { return sleeperPID(peer) == peerPID && e.get(t, peerID).State == "running" },
		}
		for label := range targets {
			t.Run(label, func(t *testing.T) {
				if got := statuses(o.Stdout)[label]; got != "refused" || !alive[label]() {
					t.Errorf("kill -9 of the %s: %q, still alive %v (stdout %q)", label, got, alive[label](), o.Stdout)
				}
			})
		}
		if _, err := e.submitter.Exec(context.Background(), "SELECT ledger.cancel($1)", peerID); err != nil {
			t.Fatal(err)
		}
		e.await(t, peerID)
	})
}

// TestLedgerRunsAreIsolated: a run cannot read or change another run's
// workspace, by relative or by host path.
func TestLedgerRunsAreIsolated(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, tier string) {
		e := newLedgerEnv(t, tier, envConfig{policy: openPolicy()})
		private := "other-run-" + randomHex(t, 8)
		succeeded(t, e.sh(t, "run-b", "printf '%s' '"+private+"' > private.txt\nchmod 600 private.txt\n"))
		other := filepath.Join(e.root, e2ePrincipal, "run-b")
		o := succeeded(t, e.sh(t, "run-a", "echo mine > mine.txt\n"+pathProbe("mine.txt", "../run-b/private.txt", other+"/private.txt", "../run-b", other)+
			writeProbe("../run-b/planted.txt", other+"/planted-abs.txt")))
		expectStatuses(t, o, "VISIBLE", "mine.txt")
		expectStatuses(t, o, "hidden", "../run-b/private.txt", other+"/private.txt", "../run-b", other)
		expectStatuses(t, o, "refused", "../run-b/planted.txt", other+"/planted-abs.txt")
		for _, f := range []string{"planted.txt", "planted-abs.txt"} {
			if _, err := os.Stat(filepath.Join(other, f)); err == nil {
				t.Errorf("run-a wrote %s into run-b's workspace", f)
			}
		}
	})
}

// startedOrCharged reports whether the request's log says it started or
// was charged to its run: execution.started or budget.consumed, or a
// request.decided with an execution or budget member.
func (e *ledgerEnv) startedOrCharged(t *testing.T, id uuid.UUID) bool {
	t.Helper()
	for _, ev := range e.events(t, id) {
		switch ev.Type {
		case "execution.started", "budget.consumed":
			return true
		case "request.decided":
			var d map[string]json.RawMessage
			if err := json.Unmarshal(ev.Payload, &d); err != nil {
				t.Fatal(err)
			}
			if _, ok := d["execution"]; ok {
				return true
			}
			if _, ok := d["budget"]; ok {
				return true
			}
		}
	}
	return false
}
