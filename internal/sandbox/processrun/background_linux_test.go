package processrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// bgEnv is a tool with background processes on a fresh ledger.
type bgEnv struct {
	db    *testdb.DB
	tool  *Tool
	alice *testdb.Role // a submitter mapped to principal alice
	exec  *testdb.Role // the tool's executor login
}

func newBackgroundTool(t *testing.T, tier string, pol procinput.Policy, mod ...func(*Config)) *bgEnv {
	t.Helper()
	db := testdb.New(t)
	execRole := db.LoginRole(t, "", "ledger_executor")
	e := &bgEnv{db: db, alice: db.LoginRole(t, "alice", "ledger_submitter"), exec: execRole}
	e.tool = newTool(t, tier, pol, append([]func(*Config){func(c *Config) {
		c.Background = BackgroundConfig{Recorder: ledger.NewProcesses(execRole.Pool), Poll: 50 * time.Millisecond, StartupCheck: 100 * time.Millisecond}
		c.KillGrace = 200 * time.Millisecond
	}}, mod...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		if err := e.tool.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return e
}

// callAs is a call of principal in runID, of a request that the tool's
// executor login holds a claim on (the ledger refuses to record processes
// of any other).
func (e *bgEnv) callAs(t *testing.T, principal, runID, input string) executor.Call {
	t.Helper()
	id := uuid.New()
	ctx := context.Background()
	if _, err := e.db.Pool.Exec(ctx, `INSERT INTO ledger.request_status (id, principal, tool, run_id, input_digest, state)
VALUES ($1, $2, 'process.run', nullif($3, ''), '\x00', 'running')`, id, principal, runID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(ctx, `INSERT INTO ledger.queue (id, state, claimed_by, claimed_role, claim_id, started_at, lease_expires_at)
VALUES ($1, 'running', 'test', $2, gen_random_uuid(), now(), now() + interval '1 hour')`, id, e.exec.Name); err != nil {
		t.Fatal(err)
	}
	return executor.Call{RequestID: id, Attempt: 1, Principal: principal, RunID: runID, Input: json.RawMessage(input)}
}

func handleInput(h uuid.UUID) string { return fmt.Sprintf(`{"handle":%q}`, h) }

func startBackground(t *testing.T, e *bgEnv, runID, input string) backgroundOutput {
	t.Helper()
	res := e.tool.Run(context.Background(), e.callAs(t, "alice", runID, input))
	if res.ErrorKind != "" {
		t.Fatalf("start: %s: %s (%s)", res.ErrorKind, res.Error, res.Output)
	}
	var out backgroundOutput
	if err := json.Unmarshal(res.Output, &out); err != nil || out.Handle == uuid.Nil || out.State != "running" {
		t.Fatalf("start output %s: %v", res.Output, err)
	}
	return out
}

func status(t *testing.T, e *bgEnv, tool executor.Tool, principal, runID string, h uuid.UUID) (processStatus, executor.Result) {
	t.Helper()
	res := tool.Run(context.Background(), e.callAs(t, principal, runID, handleInput(h)))
	var s processStatus
	if res.ErrorKind == "" {
		if err := json.Unmarshal(res.Output, &s); err != nil {
			t.Fatalf("%s output %s: %v", tool.Name(), res.Output, err)
		}
	}
	return s, res
}

// waitEnded waits until h's row is no longer running and returns it.
func waitEnded(t *testing.T, e *bgEnv, runID string, h uuid.UUID) processStatus {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		s, res := status(t, e, e.tool.StatusTool(), "alice", runID, h)
		if res.ErrorKind != "" {
			t.Fatalf("status: %s %s", res.ErrorKind, res.Error)
		}
		if s.State != "running" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s still running: %+v", h, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func streamTypes(t *testing.T, e *bgEnv, h uuid.UUID) []string {
	t.Helper()
	var types []string
	err := e.db.Pool.QueryRow(context.Background(),
		"SELECT coalesce(array_agg(type ORDER BY version), '{}') FROM ledger.events WHERE stream = $1", processStream(h)).Scan(&types)
	if err != nil {
		t.Fatal(err)
	}
	return types
}

func TestBackgroundProcessLifecycle(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			e := newBackgroundTool(t, tier, procinput.Policy{AllowedExecutables: []string{"sleep"}})
			marker := fmt.Sprint(3000 + time.Now().UnixNano()%1000)
			out := startBackground(t, e, "r1", fmt.Sprintf(`{"command":"sleep","args":[%q],"background":true}`, marker))
			if out.Mode != procinput.BackgroundRunOwned || out.Tier != tier || out.StatusTool != "process.status" {
				t.Fatalf("output %+v", out)
			}
			if len(survivors(marker)) == 0 {
				t.Fatal("the background process is not running")
			}
			s, res := status(t, e, e.tool.StatusTool(), "alice", "r1", out.Handle)
			if res.ErrorKind != "" || s.State != "running" || s.Stdout == nil || s.Mode != "run_owned" {
				t.Fatalf("status: %+v %+v", res, s)
			}
			// Only the run that started it can see or stop it.
			for _, who := range []struct{ principal, run string }{{"alice", "r2"}, {"bob", "r1"}, {"alice", ""}} {
				for _, tool := range []*ProcessTool{e.tool.StatusTool(), e.tool.StopTool()} {
					if _, res := status(t, e, tool, who.principal, who.run, out.Handle); res.ErrorKind != ledger.KindCapabilityDenied {
						t.Errorf("%s by %s/%s: %+v", tool.Name(), who.principal, who.run, res)
					}
				}
			}
			if len(survivors(marker)) == 0 {
				t.Fatal("a foreign process.stop stopped the process")
			}
			s, res = status(t, e, e.tool.StopTool(), "alice", "r1", out.Handle)
			if res.ErrorKind != "" || s.State != "ended" || s.EndReason == nil || *s.EndReason != EndStopped {
				t.Fatalf("stop: %+v %+v", res, s)
			}
			waitNoSurvivors(t, marker)
			if got := strings.Join(streamTypes(t, e, out.Handle), " "); got != "process.started process.stop_requested process.ended" {
				t.Fatalf("stream: %s", got)
			}
			// Stopping again is harmless and says how it ended.
			s, res = status(t, e, e.tool.StopTool(), "alice", "r1", out.Handle)
			if res.ErrorKind != "" || s.State != "ended" {
				t.Fatalf("second stop: %+v %+v", res, s)
			}
			var result struct {
				EndReason string `json:"end_reason"`
				Output    struct {
					Tier string `json:"tier"`
				} `json:"output"`
			}
			if err := json.Unmarshal(s.Result, &result); err != nil || result.EndReason != EndStopped || result.Output.Tier != tier {
				t.Fatalf("result %s: %v", s.Result, err)
			}
		})
	}
}

func TestBackgroundRunOwnedEndsWithTheRun(t *testing.T) {
	e := newBackgroundTool(t, "B", procinput.Policy{AllowedExecutables: []string{"sleep"}, AllowDetached: true})
	owned := startBackground(t, e, "r-end", `{"command":"sleep","args":["3101"],"background":{"mode":"run_owned"}}`)
	detached := startBackground(t, e, "r-end", `{"command":"sleep","args":["3102"],"background":{"mode":"detached","lifetime_ms":60000}}`)
	if _, err := e.alice.Pool.Exec(context.Background(), "SELECT ledger.end_run('r-end')"); err != nil {
		t.Fatal(err)
	}
	s := waitEnded(t, e, "r-end", owned.Handle)
	if *s.EndReason != EndRunEnded {
		t.Fatalf("run_owned ended with %s", *s.EndReason)
	}
	waitNoSurvivors(t, "3101")
	// The detached one is not the run's: it lives on until stopped.
	time.Sleep(200 * time.Millisecond)
	if s, _ := status(t, e, e.tool.StatusTool(), "alice", "r-end", detached.Handle); s.State != "running" {
		t.Fatalf("detached: %+v", s)
	}
	if s, res := status(t, e, e.tool.StopTool(), "alice", "r-end", detached.Handle); s.State != "ended" {
		t.Fatalf("stop detached: %+v", res)
	}
}

func TestBackgroundLifetime(t *testing.T) {
	e := newBackgroundTool(t, "C", procinput.Policy{AllowedExecutables: []string{"sleep"}})
	out := startBackground(t, e, "r-life", `{"command":"sleep","args":["3201"],"background":{"lifetime_ms":700}}`)
	if out.LifetimeMS != 700 {
		t.Fatalf("lifetime %d", out.LifetimeMS)
	}
	s := waitEnded(t, e, "r-life", out.Handle)
	if *s.EndReason != EndLifetime {
		t.Fatalf("ended with %s", *s.EndReason)
	}
	waitNoSurvivors(t, "3201")
}

// TestProcessRowsBelongToTheirExecutor: a login holding ledger_executor
// cannot rewrite another executor's background process: not its row, not
// its stream, not its end, and it asks for a stop only while holding a
// process.stop request of the process's principal and run.
func TestProcessRowsBelongToTheirExecutor(t *testing.T) {
	t.Parallel()
	e := newBackgroundTool(t, "B", procinput.Policy{AllowedExecutables: []string{"sleep"}})
	out := startBackground(t, e, "r1", `{"command":"sleep","args":["3303"],"background":true}`)
	ctx := context.Background()
	forger := e.db.LoginRole(t, "", "ledger_executor")
	refused := func(what string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%s: %v, want SQLSTATE 42501", what, err)
		}
	}
	_, err := forger.Pool.Exec(ctx, `UPDATE ledger.processes SET state = 'ended', ended_at = now() WHERE handle = $1`, out.Handle)
	refused("UPDATE a process row", err)
	_, err = forger.Pool.Exec(ctx, `SELECT * FROM ledger.append_events(ARRAY[$1], ARRAY[2::bigint], ARRAY['process.ended'], ARRAY['{}'], ARRAY['{}'])`,
		processStream(out.Handle))
	refused("append_events to a process stream", err)
	_, err = forger.Pool.Exec(ctx, `SELECT ledger.process_record($1, ARRAY['process.ended'], ARRAY['{}'], ARRAY['{}'], NULL, 'ended', 'forged')`, out.Handle)
	refused("record the end of another login's process", err)
	_, err = forger.Pool.Exec(ctx, `SELECT ledger.process_record($1, ARRAY['process.stop_requested'], ARRAY['{}'], ARRAY['{}'], $2)`, out.Handle, uuid.New())
	refused("ask for a stop without holding a stop request", err)
	// A stop request it holds, but of another principal.
	bobs := (&bgEnv{db: e.db, exec: forger}).callAs(t, "bob", "r1", handleInput(out.Handle))
	_, err = forger.Pool.Exec(ctx, `SELECT ledger.process_record($1, ARRAY['process.stop_requested'], ARRAY['{}'], ARRAY['{}'], $2)`, out.Handle, bobs.RequestID)
	refused("ask for a stop under another principal's request", err)
	alices := e.callAs(t, "alice", "r1", "{}")
	_, err = forger.Pool.Exec(ctx, `SELECT ledger.process_start($1, $2, 'detached', 'B', 'sleep', 'x', 1, 1, now(), now(), '{}', '{}')`,
		uuid.New(), alices.RequestID)
	refused("start a process under another login's claim", err)

	if s, res := status(t, e, e.tool.StatusTool(), "alice", "r1", out.Handle); res.ErrorKind != "" || s.State != "running" || s.StopRequested {
		t.Fatalf("the process after the attempts: %+v %+v", s, res)
	}
	if got := strings.Join(streamTypes(t, e, out.Handle), " "); got != "process.started" {
		t.Fatalf("its stream: %s", got)
	}
	if s, res := status(t, e, e.tool.StopTool(), "alice", "r1", out.Handle); res.ErrorKind != "" || s.State != "ended" {
		t.Fatalf("its own stop: %+v %+v", s, res)
	}
}

func TestBackgroundRefusals(t *testing.T) {
	e := newBackgroundTool(t, "B", procinput.Policy{AllowedExecutables: []string{"sleep"}},
		func(c *Config) { c.Background.MaxPerRun = 1 })
	cases := []struct {
		name, run, input string
		kind             ledger.ErrorKind
	}{
		{"no run", "", `{"command":"sleep","args":["1"],"background":true}`, ledger.KindInvalidInput},
		{"detached without policy", "r", `{"command":"sleep","args":["1"],"background":{"mode":"detached"}}`, ledger.KindCapabilityDenied},
		{"lifetime and timeout", "r", `{"command":"sleep","args":["1"],"timeout_ms":10,"background":{"lifetime_ms":20}}`, ledger.KindInvalidInput},
	}
	for _, tc := range cases {
		if res := e.tool.Run(context.Background(), e.callAs(t, "alice", tc.run, tc.input)); res.ErrorKind != tc.kind {
			t.Errorf("%s: %s %s", tc.name, res.ErrorKind, res.Error)
		}
	}
	first := startBackground(t, e, "r", `{"command":"sleep","args":["3301"],"background":true}`)
	if res := e.tool.Run(context.Background(), e.callAs(t, "alice", "r", `{"command":"sleep","args":["3302"],"background":true}`)); res.ErrorKind != ledger.KindQuotaExceeded {
		t.Errorf("second in run: %+v", res)
	}
	// Processes are named by handle only: a pid is not an input.
	for _, in := range []string{`{"pid":1}`, `{"handle":"1"}`, `{"handle":"` + first.Handle.String() + `","pid":1}`, `{}`, `[]`} {
		for _, tool := range []*ProcessTool{e.tool.StatusTool(), e.tool.StopTool()} {
			if _, err := tool.Prepare(context.Background(), e.callAs(t, "alice", "r", in)); err == nil {
				t.Errorf("%s accepted %s", tool.Name(), in)
			}
			if res := tool.Run(context.Background(), e.callAs(t, "alice", "r", in)); res.ErrorKind != ledger.KindInvalidInput {
				t.Errorf("%s %s: %+v", tool.Name(), in, res)
			}
		}
	}
	if res := e.tool.StatusTool().Run(context.Background(), e.callAs(t, "alice", "r", handleInput(uuid.New()))); res.ErrorKind != ledger.KindCapabilityDenied {
		t.Errorf("unknown handle: %+v", res)
	}
}

func TestBackgroundEndingAtOnceIsAForegroundCall(t *testing.T) {
	// A long startup check: under -race the init lingers a second after
	// its target has exited (the race runtime's exit delay).
	e := newBackgroundTool(t, "B", procinput.Policy{AllowedExecutables: []string{"echo"}},
		func(c *Config) { c.Background.StartupCheck = 10 * time.Second })
	res := e.tool.Run(context.Background(), e.callAs(t, "alice", "r", `{"command":"echo","args":["quick"],"background":true}`))
	if res.ErrorKind != "" {
		t.Fatal(res)
	}
	o := decode(t, res)
	if o.Stdout != "quick\n" || o.ExitCode != 0 {
		t.Fatalf("%+v", o)
	}
	var n int
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.processes").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

func TestBackgroundCloseStopsAndRecords(t *testing.T) {
	e := newBackgroundTool(t, "B", procinput.Policy{AllowedExecutables: []string{"sleep"}})
	out := startBackground(t, e, "r", `{"command":"sleep","args":["3401"],"background":true}`)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := e.tool.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoSurvivors(t, "3401")
	var state, reason string
	if err := e.db.Pool.QueryRow(ctx, "SELECT state, end_reason FROM ledger.processes WHERE handle = $1", out.Handle).Scan(&state, &reason); err != nil {
		t.Fatal(err)
	}
	if state != "ended" || reason != EndShutdown {
		t.Fatalf("%s %s", state, reason)
	}
	if res := e.tool.Run(ctx, e.callAs(t, "alice", "r", `{"command":"sleep","args":["1"],"background":true}`)); res.ErrorKind != ledger.KindSpawnFailed {
		t.Fatalf("start after close: %+v", res)
	}
}

// TestOrphansOfDeadExecutorsAreAccountedFor plants the rows a killed
// executor leaves behind — one whose process still runs, one whose process
// is gone — and checks that a new executor kills the first and records
// both.
func TestOrphansOfDeadExecutorsAreAccountedFor(t *testing.T) {
	db := testdb.New(t)
	db.ForgesEvents() // the dead executor's processes are written by hand
	ctx := context.Background()
	me, err := selfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	// A dead executor: a process that has exited (its pid is not reused
	// within the test with the same start time).
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadStart, err := pidStart(dead.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.Wait(); err != nil {
		t.Fatal(err)
	}
	owner := identity{host: me.host, boot: me.boot, pid: dead.Process.Pid, start: deadStart}
	orphan := exec.Command("sleep", "3501")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = orphan.Wait(); close(waited) }()
	orphanStart, err := pidStart(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// Executors of one host share a login role: the one that records
	// the dead executor's processes is the role that started them.
	execRole := db.LoginRole(t, "", "ledger_executor")
	running, lost := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	otherHost := uuid.Must(uuid.NewV7())
	for _, r := range []struct {
		h     uuid.UUID
		owner string
		pid   int
		start uint64
	}{
		{running, owner.String(), orphan.Process.Pid, orphanStart},
		{lost, owner.String(), dead.Process.Pid, deadStart},
		{otherHost, identity{host: "elsewhere", boot: "b", pid: 1, start: 1}.String(), orphan.Process.Pid, orphanStart},
	} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger.events (stream, version, type, payload, metadata)
VALUES ($1, 1, 'process.started', '{}', '{}')`, processStream(r.h)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger.processes
    (handle, principal, run_id, request_id, mode, tier, command, owner, owner_role, pid, pid_start, started_at, expires_at)
VALUES ($1, 'alice', 'r', $2, 'run_owned', 'B', 'sleep', $3, $6, $4, $5, now(), now() + interval '1 hour')`,
			r.h, uuid.New(), r.owner, r.pid, int64(r.start), execRole.Name); err != nil {
			t.Fatal(err)
		}
	}
	tool := newTool(t, "B", procinput.Policy{}, func(c *Config) { c.Background = BackgroundConfig{Recorder: ledger.NewProcesses(execRole.Pool)} })
	t.Cleanup(func() { _ = tool.Close(context.Background()) })
	select {
	case <-waited:
	case <-time.After(waitLong):
		t.Fatal("the orphan was not killed")
	}
	deadline := time.Now().Add(waitLong)
	for {
		var states []string
		if err := db.Pool.QueryRow(ctx, `SELECT array_agg(state || ':' || coalesce(end_reason, '') ORDER BY handle) FROM ledger.processes`).Scan(&states); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(states, " "); got == "ended:orphaned lost:lost running:" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("states %s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e := &bgEnv{db: db}
	if got := strings.Join(streamTypes(t, e, running), " "); got != "process.started process.ended" {
		t.Fatalf("orphan stream %s", got)
	}
	if got := strings.Join(streamTypes(t, e, lost), " "); got != "process.started process.lost" {
		t.Fatalf("lost stream %s", got)
	}
}

// TestBackgroundStrictEgressRecordsConnections runs a tier C background
// process with strict egress: each connection it makes is an
// egress.connection event on its process stream while it runs, before its
// process.ended.
func TestBackgroundStrictEgressRecordsConnections(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is required (scripts/ensure-test-deps.sh installs it): %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") }))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	pol := interpreters
	pol.EgressMode = procinput.EgressStrict
	pol.EgressAllowlist = []string{"allowed.test"}
	e := newBackgroundTool(t, "C", pol, func(c *Config) {
		c.EgressPorts = []int{port}
		c.EgressResolver = fakeResolver{"api.allowed.test": {loopback}}
		c.EgressSocketDir = filepath.Join(c.WorkspaceRoot, "..", "egress")
		c.EgressPrivateRanges = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	ws := prepare(t, e.tool, "r-net")
	script := fmt.Sprintf("curl -sS --max-time 10 http://api.allowed.test:%d/a\ncurl -sS --max-time 10 http://elsewhere.test:%d/b\nexec sleep 3601\n", port, port)
	if err := os.WriteFile(filepath.Join(ws, "bg.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out := startBackground(t, e, "r-net", `{"command":"sh","args":["bg.sh"],"requested_egress_hosts":["api.allowed.test"],"background":true}`)
	deadline := time.Now().Add(waitLong)
	for {
		types := streamTypes(t, e, out.Handle)
		if strings.Count(strings.Join(types, " "), "egress.connection") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process stream while running: %v", types)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s, res := status(t, e, e.tool.StopTool(), "alice", "r-net", out.Handle); s.State != "ended" {
		t.Fatalf("stop: %+v", res)
	}
	if got := strings.Join(streamTypes(t, e, out.Handle), " "); got != "process.started egress.connection egress.connection process.stop_requested process.ended" {
		t.Fatalf("stream: %s", got)
	}
	var allowed []bool
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT array_agg((payload->>'allowed')::boolean ORDER BY version)
FROM ledger.events WHERE stream = $1 AND type = 'egress.connection'`, processStream(out.Handle)).Scan(&allowed); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(allowed) != "[true false]" {
		t.Fatalf("allowed = %v", allowed)
	}
	waitNoSurvivors(t, "3601")
}
