package executor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// testPolicy allows alice and carol everything; bob may not run echo.
const testPolicy = `
@id("alice-and-carol")
permit (principal, action == Action::"tool.execute", resource)
when { principal == Principal::"alice" || principal == Principal::"carol" };
@id("alice-skills")
permit (principal == Principal::"alice", action == Action::"skill.execute", resource);
@id("bob-sleeps")
permit (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"sleep");
@id("no-echo-for-bob")
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

type env struct {
	db       *testdb.DB
	alice    *ledger.Client
	bob      *ledger.Client
	carol    *ledger.Client // an approver
	aliceSQL *testdb.Role
	bobSQL   *testdb.Role
	carolSQL *testdb.Role
	execSQL  *testdb.Role // the executor's login role
	pub      ed25519.PublicKey
	exec     *Executor
	policy   *policy.Engine // exec's
	signer   *attest.Signer // exec's
	stop     func()
}

// flaky is a tool that is not safe to repeat and counts its runs.
type flaky struct{ runs atomic.Int64 }

func (*flaky) Name() string                               { return "test.unsafe" }
func (*flaky) Executor() string                           { return "builtin" }
func (*flaky) Tier() string                               { return "builtin" }
func (*flaky) SafeToRepeat() bool                         { return false }
func (*flaky) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (f *flaky) Run(ctx context.Context, c Call) Result {
	f.runs.Add(1)
	return Result{Output: json.RawMessage(`{"ran":true}`)}
}

// waitLong bounds every wait for something the tests expect to happen: a
// hang fails the test, but a machine busy with other work (CI runs these
// beside other jobs) only makes it slower.
const waitLong = 2 * time.Minute

func setup(t *testing.T, mutate func(*Config), extra ...Tool) *env {
	t.Helper()
	db := testdb.New(t)
	aliceRole := db.LoginRole(t, "alice", "ledger_submitter")
	bobRole := db.LoginRole(t, "bob", "ledger_submitter")
	carolRole := db.LoginRole(t, "carol", "ledger_submitter", "ledger_approver")
	pol, err := policy.FromSources([]policy.Source{{Name: "test.cedar", Text: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// A lease of 5 s: heartbeats every third of it keep it from expiring
	// under an executor that lives, even when the machine is busy; the
	// rescue tests expire their ghosts' leases at once.
	cfg := Config{Label: "exec-test", Lease: 5 * time.Second, PollInterval: 200 * time.Millisecond,
		RescueInterval: 100 * time.Millisecond, ShutdownGrace: 2 * time.Second, ToolTimeout: 10 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	tools := append([]Tool{Echo{}, Sleep{}}, extra...)
	// The executor runs as a login role holding ledger_executor and
	// nothing else, as the README documents: every test exercises that
	// boundary.
	execRole := db.LoginRole(t, "", "ledger_executor")
	signer := attest.NewSigner(priv)
	x, err := New(execRole.Pool, cfg, pol, signer, slog.New(slog.DiscardHandler), tools...)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, aliceSQL: aliceRole, bobSQL: bobRole, carolSQL: carolRole, execSQL: execRole, pub: pub, exec: x,
		policy: pol, signer: signer,
		alice: ledger.NewClient(aliceRole.Pool), bob: ledger.NewClient(bobRole.Pool), carol: ledger.NewClient(carolRole.Pool)}
	for _, c := range []*ledger.Client{e.alice, e.bob, e.carol} {
		t.Cleanup(c.Close)
	}
	e.stop = e.start(t, x)
	return e
}

// start runs x until the test ends (or stop is called) and fails the test
// if Run returns an error.
func (e *env) start(t *testing.T, x *Executor) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("executor: %v", err)
			}
		case <-time.After(waitLong):
			t.Errorf("executor did not stop within %s", waitLong)
		}
	}
	t.Cleanup(stop)
	return stop
}

func await(t *testing.T, c *ledger.Client, id uuid.UUID) *ledger.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	r, err := c.Await(ctx, id)
	if err != nil {
		t.Fatalf("await %s: %v", id, err)
	}
	return r
}

func submit(t *testing.T, c *ledger.Client, p ledger.SubmitParams) uuid.UUID {
	t.Helper()
	id, err := c.Submit(context.Background(), p)
	if err != nil {
		t.Fatalf("submit %s: %v", p.Tool, err)
	}
	return id
}

func (e *env) events(t *testing.T, id uuid.UUID) []ledger.Event {
	t.Helper()
	evs, err := ledger.NewStore(e.db.Pool).ReadStream(context.Background(), "request:"+id.String(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func types(evs []ledger.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type)
	}
	return strings.Join(s, " ")
}

// verifyAttestation checks the request's last attestation: signature,
// subjects against the exact input and output, and the recorded digest.
func (e *env) verifyAttestation(t *testing.T, r *ledger.Request) *attest.Statement {
	t.Helper()
	evs := e.events(t, r.ID)
	var p struct {
		Digest   string `json:"attestation_digest"`
		Envelope string `json:"envelope"`
	}
	var input json.RawMessage
	for _, ev := range evs {
		switch ev.Type {
		case "attestation.signed", "execution.completed":
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
		case "tool.requested":
			var tr struct{ Input json.RawMessage }
			if err := json.Unmarshal(ev.Payload, &tr); err != nil {
				t.Fatal(err)
			}
			input = tr.Input
		}
	}
	if p.Envelope == "" {
		t.Fatalf("request %s has no attestation (attestation.signed or execution.completed): %s", r.ID, types(evs))
	}
	st, err := attest.Verify([]byte(p.Envelope), e.pub)
	if err != nil {
		t.Fatalf("attestation of %s does not verify: %v", r.ID, err)
	}
	if attest.Digest([]byte(p.Envelope)) != p.Digest || r.AttestationDigest == nil || *r.AttestationDigest != p.Digest {
		t.Fatalf("attestation digest: event %s, envelope %s, request %v", p.Digest, attest.Digest([]byte(p.Envelope)), r.AttestationDigest)
	}
	var output []byte
	if len(r.Output) > 0 && r.State == ledger.StateSucceeded {
		output = evOutput(t, evs)
	}
	if err := st.VerifySubjects(input, output); err != nil {
		t.Fatalf("subjects of %s: %v", r.ID, err)
	}
	if st.Predicate.RequestID != r.ID.String() || st.Predicate.Principal != r.Principal || st.Predicate.Tool != r.Tool {
		t.Fatalf("predicate %+v does not match request %+v", st.Predicate, r)
	}
	return st
}

// evOutput is the exact output bytes recorded in execution.completed (or
// execution.finished).
func evOutput(t *testing.T, evs []ledger.Event) []byte {
	for _, ev := range evs {
		if ev.Type == "execution.completed" || ev.Type == "execution.finished" {
			var f struct{ Output json.RawMessage }
			if err := json.Unmarshal(ev.Payload, &f); err != nil {
				t.Fatal(err)
			}
			return f.Output
		}
	}
	return nil
}

func TestEchoSucceedsAndIsAttested(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "hello"}, RunID: "r1"})
	r := await(t, e.alice, id)
	if r.State != ledger.StateSucceeded || string(r.Output) != `{"text": "hello"}` || *r.Tier != "builtin" || r.ErrorKind != nil {
		t.Fatalf("request = %+v output %s", r, r.Output)
	}
	want := "tool.requested request.decided execution.completed"
	evs := e.events(t, id)
	if got := types(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	// request.decided records the claim, the decision, the run's budget
	// and the start: what request.claimed, policy.decided,
	// budget.consumed and execution.started recorded.
	var d struct {
		Executor, Verdict, Decision, Stage string
		ClaimID                            string    `json:"claim_id"`
		PolicyDigest                       string    `json:"policy_digest"`
		Attempt                            int       `json:"attempt"`
		LeaseExpiresAt                     time.Time `json:"lease_expires_at"`
		Budget                             *struct {
			Principal string `json:"principal"`
			RunID     string `json:"run_id"`
			Used      int    `json:"used"`
			MaxCalls  int    `json:"max_calls"`
		}
		Execution *struct {
			Executor, Tier string
			Attempt        int
			TimeoutMS      int64 `json:"timeout_ms"`
		}
	}
	if err := json.Unmarshal(evs[1].Payload, &d); err != nil {
		t.Fatal(err)
	}
	if d.Executor != "exec-test" || d.ClaimID == "" || d.Attempt != 1 || d.LeaseExpiresAt.IsZero() || d.Verdict != "run" ||
		d.Decision != "allow" || d.Stage != "allow" || d.PolicyDigest != e.policy.Digest() ||
		d.Budget == nil || d.Budget.Principal != "alice" || d.Budget.RunID != "r1" || d.Budget.Used != 1 ||
		d.Execution == nil || d.Execution.Tier != "builtin" || d.Execution.Attempt != 1 || d.Execution.TimeoutMS <= 0 {
		t.Fatalf("request.decided %s", evs[1].Payload)
	}
	st := e.verifyAttestation(t, r)
	if st.Predicate.Decision != "allow" || !st.Predicate.Success || st.Predicate.Executor != "builtin" ||
		st.Predicate.ExecutorHost != "exec-test" || st.Predicate.PolicyDigest != e.policy.Digest() {
		t.Fatalf("predicate = %+v", st.Predicate)
	}
	// The policy set was published once.
	var published int
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.events WHERE type = 'policy.published'").Scan(&published); err != nil || published != 1 {
		t.Fatalf("policy.published events: %d, %v", published, err)
	}
}

func TestDenialsAreRecordedAndAttested(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, &flaky{})
	big := strings.Repeat("x", 17<<10)
	cases := []struct {
		name   string
		client *ledger.Client
		p      ledger.SubmitParams
		kind   ledger.ErrorKind
		reason string
	}{
		{"forbidden by policy", e.bob, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}}, ledger.KindPolicyDenied, "policy.deny"},
		{"no permit", e.bob, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{}}, ledger.KindPolicyDenied, "policy.baseline_deny"},
		{"unknown tool", e.alice, ledger.SubmitParams{Tool: "no.such", Input: map[string]any{}}, ledger.KindPolicyDenied, "tool.unsupported"},
		// The tool is checked before Cedar: no permit is not the reason.
		{"unknown tool, no permit either", e.bob, ledger.SubmitParams{Tool: "process.run", Input: map[string]any{}}, ledger.KindPolicyDenied, "tool.unsupported"},
		{"over the echo cap", e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": big}}, ledger.KindInvalidInput, "quota/tool_input_too_large"},
		{"echo text too long", e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": strings.Repeat("é", EchoMaxText+1)}}, ledger.KindInvalidInput, "tool.invalid_input"},
		{"echo unknown field", e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x", "extra": 1}}, ledger.KindInvalidInput, "tool.invalid_input"},
		{"sleep too long", e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 30001}}, ledger.KindInvalidInput, "tool.invalid_input"},
	}
	for _, tc := range cases {
		id := submit(t, tc.client, tc.p)
		r := await(t, tc.client, id)
		if r.State != ledger.StateDenied || r.ErrorKind == nil || *r.ErrorKind != tc.kind {
			t.Errorf("%s: %+v", tc.name, r)
			continue
		}
		evs := e.events(t, id)
		if got := types(evs); got != "tool.requested request.decided attestation.signed" {
			t.Errorf("%s: events %s", tc.name, got)
		}
		var d struct {
			Decision   string `json:"decision"`
			ReasonCode string `json:"reason_code"`
			ErrorKind  string `json:"error_kind"`
		}
		if err := json.Unmarshal(evs[1].Payload, &d); err != nil || d.Decision != "deny" || d.ReasonCode != tc.reason {
			t.Errorf("%s: request.decided %s", tc.name, evs[1].Payload)
		}
		st := e.verifyAttestation(t, r)
		if st.Predicate.Decision != "deny" || st.Predicate.Executor != "policy" || st.Predicate.ErrorKind != string(tc.kind) {
			t.Errorf("%s: predicate %+v", tc.name, st.Predicate)
		}
	}
}

func TestBudgetIsDurableAndDenialsDoNotSpendIt(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	if _, err := e.aliceSQL.Pool.Exec(ctx, "SELECT ledger.set_run_budget('r-budget', 2)"); err != nil {
		t.Fatal(err)
	}
	// A denial (unknown tool) first: it must not consume.
	denied := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "no.such", Input: map[string]any{}, RunID: "r-budget"}))
	if denied.State != ledger.StateDenied {
		t.Fatal(denied)
	}
	var states []ledger.State
	for i := range 3 {
		r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint(i)}, RunID: "r-budget"}))
		states = append(states, r.State)
		if i == 2 && (r.ErrorKind == nil || *r.ErrorKind != ledger.KindBudgetExhausted) {
			t.Fatalf("third call: %+v", r)
		}
	}
	if fmt.Sprint(states) != "[succeeded succeeded denied]" {
		t.Fatalf("states = %v", states)
	}
	// Budgets are per principal: carol's run of the same name is fresh.
	if r := await(t, e.carol, submit(t, e.carol, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "c"}, RunID: "r-budget"})); r.State != ledger.StateSucceeded {
		t.Fatalf("carol: %+v", r)
	}
	var used int
	if err := e.db.Pool.QueryRow(ctx, "SELECT used FROM ledger.runs WHERE principal = 'alice' AND run_id = 'r-budget'").Scan(&used); err != nil || used != 2 {
		t.Fatalf("used = %d, %v", used, err)
	}
}

func TestEndedRunTakesNoMoreCalls(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	if r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "a"}, RunID: "r-end"})); r.State != ledger.StateSucceeded {
		t.Fatal(r)
	}
	var ended bool
	if err := e.aliceSQL.Pool.QueryRow(ctx, "SELECT ledger.end_run('r-end', 'done')").Scan(&ended); err != nil || !ended {
		t.Fatalf("end_run = %v, %v", ended, err)
	}
	// A second end appends nothing and says so.
	if err := e.aliceSQL.Pool.QueryRow(ctx, "SELECT ledger.end_run('r-end')").Scan(&ended); err != nil || ended {
		t.Fatalf("second end_run = %v, %v", ended, err)
	}
	r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "b"}, RunID: "r-end"}))
	if r.State != ledger.StateDenied || r.ErrorKind == nil || *r.ErrorKind != ledger.KindPolicyDenied || r.Error == nil || !strings.Contains(*r.Error, "has ended") {
		t.Fatalf("call after end: %+v", r)
	}
	// Runs are per principal: carol's run of the same name goes on.
	if r := await(t, e.carol, submit(t, e.carol, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "c"}, RunID: "r-end"})); r.State != ledger.StateSucceeded {
		t.Fatalf("carol: %+v", r)
	}
	var types []string
	if err := e.db.Pool.QueryRow(ctx, "SELECT array_agg(type ORDER BY version) FROM ledger.events WHERE stream = 'run:alice/r-end'").Scan(&types); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(types) != "[run.ended]" {
		t.Fatalf("run stream = %v", types)
	}
	// Bad input is refused with a stable SQLSTATE.
	if _, err := e.aliceSQL.Pool.Exec(ctx, "SELECT ledger.end_run('../x')"); !isSQLState(err, "22023") {
		t.Fatalf("bad run id: %v", err)
	}
}

// TestDefaultBudget: six calls of one run all run under the default
// budget (issue 25: a default of 4 surprised), and
// executor.default_max_calls_per_run still bounds a run that set none.
func TestDefaultBudget(t *testing.T) {
	t.Parallel()
	calls := func(e *env, run string) (denied int) {
		for i := range 6 {
			r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint(i)}, RunID: run}))
			if r.State == ledger.StateDenied {
				denied++
			}
		}
		return denied
	}
	if denied := calls(setup(t, nil), "r-default"); denied != 0 {
		t.Errorf("%d of 6 denied under the default budget, want 0", denied)
	}
	if denied := calls(setup(t, func(c *Config) { c.DefaultMaxCallsPerRun = 4 }), "r-four"); denied != 2 {
		t.Errorf("%d of 6 denied with default_max_calls_per_run 4, want 2", denied)
	}
}

func TestApproval(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Sensitive = []string{"sleep"} })
	ctx := context.Background()
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}})
	waitState(t, e.alice, id, ledger.StateAwaitingApproval)

	// The submitter may not approve its own request, nor may a non-approver.
	if _, err := e.aliceSQL.Pool.Exec(ctx, "SELECT ledger.approve($1)", id); err == nil {
		t.Fatal("the submitter approved its own request")
	}
	// The approval is bound to the input digest the approver saw.
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1, 'ok', 'sha256:00')", id); err == nil {
		t.Fatal("an approval for other input was accepted")
	}
	var digest string
	if err := e.db.Pool.QueryRow(ctx, "SELECT 'sha256:' || encode(input_digest, 'hex') FROM ledger.request_status WHERE id = $1", id).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1, 'looks fine', $2)", id, digest); err != nil {
		t.Fatal(err)
	}
	r := await(t, e.alice, id)
	if r.State != ledger.StateSucceeded {
		t.Fatalf("approved request: %+v", r)
	}
	want := "tool.requested request.decided approval.requested approval.granted request.decided execution.completed"
	if got := types(e.events(t, id)); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}

	// A denied approval ends the request, and the executor attests it.
	id2 := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 2}})
	waitState(t, e.alice, id2, ledger.StateAwaitingApproval)
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.deny_approval($1, 'no')", id2); err != nil {
		t.Fatal(err)
	}
	r2 := await(t, e.alice, id2)
	if r2.State != ledger.StateDenied || *r2.ErrorKind != ledger.KindApprovalDenied {
		t.Fatalf("denied approval: %+v", r2)
	}
	waitAttested(t, e, id2)
}

func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Sensitive = []string{"sleep"}; c.ApprovalTimeout = 300 * time.Millisecond })
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}})
	r := await(t, e.alice, id)
	if r.State != ledger.StateDenied || *r.ErrorKind != ledger.KindApprovalDenied {
		t.Fatalf("expired approval: %+v", r)
	}
	e.verifyAttestation(t, r)
}

func waitState(t *testing.T, c *ledger.Client, id uuid.UUID, want ledger.State) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		r, err := c.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s is %s, not %s", id, r.State, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitAttested(t *testing.T, e *env, id uuid.UUID) *ledger.Request {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		r, err := e.alice.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.AttestationDigest != nil {
			e.verifyAttestation(t, r)
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s was never attested", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// blocker is a tool with no natural end: it runs until its context ends,
// tells entered when it starts and records why it was stopped.
type blocker struct {
	entered chan struct{}
	cause   chan error
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 1), cause: make(chan error, 1)}
}

func (*blocker) Name() string                               { return "test.block" }
func (*blocker) Executor() string                           { return "builtin" }
func (*blocker) Tier() string                               { return "builtin" }
func (*blocker) SafeToRepeat() bool                         { return true }
func (*blocker) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (b *blocker) Run(ctx context.Context, c Call) Result {
	b.entered <- struct{}{}
	<-ctx.Done()
	b.cause <- context.Cause(ctx)
	return interrupted(ctx, "test.block")
}

// TestCancelStopsARunningCall: ledger.cancel of a running request stops
// its call (the tool sees its context cancelled, for that reason) and the
// request ends cancelled. The call has no natural end and the tool timeout
// is far away, so nothing but the cancellation can end it; how fast that
// is belongs to BenchmarkCancelRunning, not to a test on a busy machine.
func TestCancelStopsARunningCall(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	e := setup(t, func(c *Config) { c.ToolTimeout = time.Hour }, b)
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "test.block", Input: map[string]any{}})
	waitEntered(t, b.entered)
	if ok, err := e.alice.Cancel(context.Background(), id, "stop"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	select {
	case cause := <-b.cause:
		if !errors.Is(cause, errCancelled) {
			t.Fatalf("the call was stopped by %v, not by the cancellation", cause)
		}
	case <-time.After(waitLong):
		t.Fatalf("the call was still running %s after ledger.cancel", waitLong)
	}
	r := await(t, e.alice, id)
	if r.State != ledger.StateCancelled || *r.ErrorKind != ledger.KindCancelled {
		t.Fatalf("cancelled running request: %+v", r)
	}
	if got := types(e.events(t, id)); !strings.HasSuffix(got, "execution.finished request.cancelled attestation.signed") {
		t.Errorf("events: %s", got)
	}
	e.verifyAttestation(t, r)
}

// waitEntered waits for a tool to report that a call has begun.
func waitEntered(t *testing.T, entered <-chan struct{}) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(waitLong):
		t.Fatalf("no call of the tool began within %s of its submission", waitLong)
	}
}

func TestCancelledPendingRequestIsAttested(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Sensitive = []string{"sleep"} })
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}})
	waitState(t, e.alice, id, ledger.StateAwaitingApproval)
	if _, err := e.alice.Cancel(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	waitAttested(t, e, id)
}

// TestShutdownStopsAndRecordsRunningCalls: after the grace period the
// running call is stopped and its outcome recorded.
func TestShutdownStopsAndRecordsRunningCalls(t *testing.T) {
	t.Parallel()
	// A grace of 3 s leaves the 100 ms call time to end on a busy machine.
	e := setup(t, func(c *Config) { c.ShutdownGrace = 3 * time.Second })
	quick := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 100}})
	long := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 20000}})
	waitState(t, e.alice, long, ledger.StateRunning)
	e.stop()
	if r := await(t, e.alice, quick); r.State != ledger.StateSucceeded {
		t.Fatalf("the quick call did not finish in the grace period: %+v", r)
	}
	r := await(t, e.alice, long)
	if r.State != ledger.StateCancelled || !strings.Contains(*r.Error, "shut down") {
		t.Fatalf("the long call: %+v", r)
	}
	e.verifyAttestation(t, r)
}

// claimAsGhost claims a request as an executor that then vanishes, with
// its lease already expired; started says whether execution had begun.
func claimAsGhost(t *testing.T, e *env, started bool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var id uuid.UUID
	err := e.db.Pool.QueryRow(ctx, "SELECT id FROM ledger.claim_requests('ghost', 1, '1 millisecond')").Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	if started {
		if _, err := e.db.Pool.Exec(ctx, "UPDATE ledger.queue SET started_at = now() WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func TestRescue(t *testing.T) {
	t.Parallel()
	unsafe := &flaky{}
	e := setup(t, nil, unsafe)
	e.stop() // the ghost claims; this executor only rescues
	ctx := context.Background()
	// The rescuer is another executor login: an expired lease is any
	// executor's to settle, whoever claimed it.
	rescuerRole := e.db.LoginRole(t, "", "ledger_executor")

	for _, tc := range []struct {
		tool    string
		started bool
		state   ledger.State
		kind    string
	}{
		{"test.unsafe", false, ledger.StateSucceeded, ""},            // never started: runs
		{"echo", true, ledger.StateSucceeded, ""},                    // safe to repeat: runs again
		{"test.unsafe", true, ledger.StateFailed, "outcome_unknown"}, // may have run: never twice
	} {
		input := map[string]any{"text": "x"}
		id := submit(t, e.alice, ledger.SubmitParams{Tool: tc.tool, Input: input})
		if got := claimAsGhost(t, e, tc.started); got != id {
			t.Fatalf("ghost claimed %s, not %s", got, id)
		}
		before := unsafe.runs.Load()
		x, err := New(rescuerRole.Pool, Config{Label: "rescuer", RescueInterval: 50 * time.Millisecond, PollInterval: 100 * time.Millisecond},
			e.policy, e.signer, slog.New(slog.DiscardHandler), Echo{}, Sleep{}, unsafe)
		if err != nil {
			t.Fatal(err)
		}
		stop := e.start(t, x)
		r := await(t, e.alice, id)
		stop()
		if r.State != tc.state || (tc.kind != "" && string(*r.ErrorKind) != tc.kind) {
			t.Fatalf("%s started=%v: %+v", tc.tool, tc.started, r)
		}
		evs := e.events(t, id)
		if !strings.Contains(types(evs), "lease.expired") {
			t.Fatalf("no lease.expired: %s", types(evs))
		}
		if tc.kind == "outcome_unknown" && unsafe.runs.Load() != before {
			t.Fatal("an unsafe tool that may have run was run again")
		}
		e.verifyAttestation(t, r)
	}
	_ = ctx
}

// TestHeartbeatKeepsLongCallsClaimed: a call that runs longer than its
// lease keeps its claim while its executor lives. The lease is 3 s, so a
// heartbeat (every second) may be up to 2 s late on a busy machine.
func TestHeartbeatKeepsLongCallsClaimed(t *testing.T) {
	t.Parallel()
	// A call of more than two leases. The lease is a few seconds, not
	// one: a heartbeat (every third of it) that a loaded machine delays
	// by a second must not count as a dead executor.
	e := setup(t, func(c *Config) { c.Lease = 4 * time.Second; c.ToolTimeout = time.Minute })
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 9000}})
	r := await(t, e.alice, id)
	if r.State != ledger.StateSucceeded {
		t.Fatalf("a call longer than its lease: %+v", r)
	}
	if strings.Contains(types(e.events(t, id)), "lease.expired") {
		t.Fatal("the lease expired although the executor was alive")
	}
}

func TestExecutorsNeverShareAClaim(t *testing.T) {
	t.Parallel()
	// Leases longer than setup's 5 s: on a loaded machine a claim of 64
	// signed requests can outlast that, and a request rescued from a lease
	// that expired is rightly claimed again, which is not what is counted.
	e := setup(t, func(c *Config) { c.Lease = 30 * time.Second })
	second, err := New(e.db.LoginRole(t, "", "ledger_executor").Pool, Config{Label: "exec-second"}, e.policy, e.signer, slog.New(slog.DiscardHandler), Echo{}, Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	e.start(t, second)
	var ids []uuid.UUID
	for i := range 200 {
		ids = append(ids, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint(i)}}))
	}
	for _, id := range ids {
		if r := await(t, e.alice, id); r.State != ledger.StateSucceeded {
			t.Fatalf("%+v", r)
		}
	}
	var claims, dup int
	err = e.db.Pool.QueryRow(context.Background(), `SELECT count(*), count(*) - count(DISTINCT stream)
FROM ledger.events WHERE type = 'request.decided'`).Scan(&claims, &dup)
	if err != nil || claims != 200 || dup != 0 {
		t.Fatalf("claims %d, duplicates %d, %v", claims, dup, err)
	}
}

func TestToolTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.ToolTimeout = 200 * time.Millisecond })
	r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 5000}}))
	if r.State != ledger.StateFailed || *r.ErrorKind != ledger.KindTimedOut {
		t.Fatalf("a call past the timeout: %+v", r)
	}
	st := e.verifyAttestation(t, r)
	if !st.Predicate.TimedOut || st.Predicate.Success {
		t.Fatalf("predicate = %+v", st.Predicate)
	}
}

// panicky panics, as a buggy tool might.
type panicky struct{ Echo }

func (panicky) Name() string { return "test.panic" }
func (panicky) Run(context.Context, Call) Result {
	panic("boom")
}

func TestAPanickingToolFailsItsRequestOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, panicky{})
	r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "test.panic", Input: map[string]any{"text": "x"}}))
	if r.State != ledger.StateFailed || *r.ErrorKind != ledger.KindRuntimeFailure {
		t.Fatalf("panicking tool: %+v", r)
	}
	// The executor keeps working.
	if r := await(t, e.alice, submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "after"}})); r.State != ledger.StateSucceeded {
		t.Fatalf("after the panic: %+v", r)
	}
}

var _ = errors.New

// isSQLState reports whether err is a PostgreSQL error with code.
func isSQLState(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// rawTool returns whatever its input's "result" says, to test what the
// executor does with awkward results.
type rawTool struct{}

func (rawTool) Name() string                               { return "test.raw" }
func (rawTool) Executor() string                           { return "builtin" }
func (rawTool) Tier() string                               { return "builtin" }
func (rawTool) SafeToRepeat() bool                         { return true }
func (rawTool) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (rawTool) Run(ctx context.Context, c Call) Result {
	var in struct {
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
		Events []Event         `json:"events"`
		NUL    bool            `json:"nul"` // jsonb input cannot carry a NUL: make one
		// A lone surrogate escape passes json.Valid but not jsonb: only the
		// database refuses it.
		Surrogate bool `json:"surrogate"`
	}
	_ = json.Unmarshal(c.Input, &in)
	r := Result{Output: in.Output, Events: in.Events}
	if in.NUL && in.Error == "" {
		r.Output = json.RawMessage(`{"s":"a\u0000b"}`)
	}
	if in.Surrogate {
		r.Output = json.RawMessage(`{"s":"\ud800"}`)
	}
	in.Error = strings.ReplaceAll(in.Error, "@", "\x00")
	if in.Error != "" {
		r.ErrorKind, r.Error = "runtime_failure", in.Error
	}
	return r
}

func TestResultsTheLedgerCannotStoreStillEnd(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, rawTool{})
	e.db.ForgesEvents() // rawTool records events of its own making
	cases := []struct {
		name  string
		input map[string]any
		state ledger.State
		check func(*ledger.Request) bool
	}{
		{"NUL in output", map[string]any{"nul": true}, ledger.StateFailed,
			func(r *ledger.Request) bool { return strings.Contains(*r.Error, "NUL") }},
		{"refused by the database", map[string]any{"surrogate": true}, ledger.StateFailed,
			func(r *ledger.Request) bool { return strings.Contains(*r.Error, "could not be stored") }},
		{"escaped backslash is not NUL", map[string]any{"output": json.RawMessage(`{"s":"a\\u0000b"}`)}, ledger.StateSucceeded,
			func(r *ledger.Request) bool { return strings.Contains(string(r.Output), `\\u0000`) }},
		{"NUL in error", map[string]any{"error": "bad@thing"}, ledger.StateFailed,
			func(r *ledger.Request) bool { return *r.Error == "bad\uFFFDthing" }},
		{"tool events", map[string]any{"output": json.RawMessage(`{}`), "events": []map[string]any{{"Type": "egress.connection", "Payload": map[string]any{"host": "a"}}}},
			ledger.StateSucceeded, func(r *ledger.Request) bool { return true }},
		{"reserved event", map[string]any{"output": json.RawMessage(`{}`), "events": []map[string]any{{"Type": "execution.finished", "Payload": map[string]any{}}}},
			ledger.StateFailed, func(r *ledger.Request) bool { return strings.Contains(*r.Error, "may not be recorded") }},
		{"channel events", map[string]any{"output": json.RawMessage(`{}`), "events": []map[string]any{
			{"Type": "channel.message", "Payload": map[string]any{"n": 1}, "Stream": "channel:news"},
			{"Type": "channel.message", "Payload": map[string]any{"n": 2}, "Stream": "channel:news"}}},
			ledger.StateSucceeded, func(r *ledger.Request) bool { return true }},
		{"foreign stream", map[string]any{"output": json.RawMessage(`{}`), "events": []map[string]any{
			{"Type": "channel.message", "Payload": map[string]any{}, "Stream": "request:00000000-0000-0000-0000-000000000000"}}},
			ledger.StateFailed, func(r *ledger.Request) bool { return strings.Contains(*r.Error, "is not channel:<name>") }},
	}
	ids := make([]uuid.UUID, len(cases))
	for i, tc := range cases {
		ids[i] = submit(t, e.alice, ledger.SubmitParams{Tool: "test.raw", Input: tc.input})
	}
	for i, tc := range cases {
		r := await(t, e.alice, ids[i])
		if r.State != tc.state || !tc.check(r) {
			t.Errorf("%s: %+v (error %v, output %s)", tc.name, r, deref(r.Error), r.Output)
		}
	}
	var types []string
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT array_agg(type ORDER BY version) FROM ledger.events WHERE stream = $1",
		"request:"+ids[4].String()).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(types, " "); !strings.Contains(got, "egress.connection execution.completed") {
		t.Fatalf("tool events: %s", got)
	}
	// Events addressed to a channel land on its stream, in order, and not
	// on the request's.
	var ns []string
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT array_agg(payload->>'n' ORDER BY version) FROM ledger.events WHERE stream = 'channel:news'").Scan(&ns); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ns) != "[1 2]" {
		t.Fatalf("channel:news = %v", ns)
	}
	var onRequest int
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.events WHERE stream = $1 AND type = 'channel.message'",
		"request:"+ids[6].String()).Scan(&onRequest); err != nil || onRequest != 0 {
		t.Fatalf("%d channel messages on the request stream, %v", onRequest, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestHasNULEscape(t *testing.T) {
	for in, want := range map[string]bool{
		`"a\u0000"`: true, `"\\u0000"`: false, `"\\\u0000"`: true, `"u0000"`: false, `"\u00000"`: true, `"\u0001"`: false, `"\`: false,
	} {
		if got := hasNULEscape([]byte(in)); got != want {
			t.Errorf("hasNULEscape(%s) = %v", in, got)
		}
	}
}

// TestInlineToolsRunInTheClaim: an echo (an InlineTool) is claimed, decided,
// run and recorded with its attestation in one transaction, charged to its
// run there; a sleep is claimed in one and completed in another.
func TestInlineToolsRunInTheClaim(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	echo := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "inline"}, RunID: "inline-run"})
	sleep := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}, RunID: "inline-run"})
	for _, id := range []uuid.UUID{echo, sleep} {
		if r := await(t, e.alice, id); r.State != ledger.StateSucceeded {
			t.Fatalf("%+v", r)
		}
	}
	txs := func(id uuid.UUID) (types string, n int) {
		t.Helper()
		if err := e.db.Pool.QueryRow(ctx, `SELECT string_agg(type, ' ' ORDER BY version), count(DISTINCT tx_id)
FROM ledger.events WHERE stream = $1 AND version > 1`, "request:"+id.String()).Scan(&types, &n); err != nil {
			t.Fatal(err)
		}
		return types, n
	}
	if types, n := txs(echo); types != "request.decided execution.completed" || n != 1 {
		t.Errorf("echo: %s in %d transactions, want both in one", types, n)
	}
	if types, n := txs(sleep); types != "request.decided execution.completed" || n != 2 {
		t.Errorf("sleep: %s in %d transactions, want two", types, n)
	}
	var used int
	if err := e.db.Pool.QueryRow(ctx, `SELECT used FROM ledger.runs WHERE principal = 'alice' AND run_id = 'inline-run'`).Scan(&used); err != nil || used != 2 {
		t.Errorf("the run's budget used %d (%v), want 2", used, err)
	}
	if r := await(t, e.alice, echo); r.Output == nil || r.AttestationDigest == nil {
		t.Errorf("echo: %+v", r)
	}
	e.verifyAttestation(t, await(t, e.alice, echo))
}
