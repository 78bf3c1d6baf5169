package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/transparency-dev/formats/log"
	tlog "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// transparencyPolicy lets alice and carol run everything; bob may not run
// echo.
const transparencyPolicy = `
permit (principal, action == Action::"tool.execute", resource)
when { principal == Principal::"alice" || principal == Principal::"carol" };
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

const transparencyOrigin = "execledger.test/log"

// unsafeTool is sensitive (it waits for approval) and not safe to repeat
// (a rescue after it started is outcome_unknown). Its output is spelled
// with spaces and characters encoding/json escapes: the attestation must
// sign the bytes the ledger stores.
type unsafeTool struct{}

func (unsafeTool) Name() string                                        { return "test.unsafe" }
func (unsafeTool) Executor() string                                    { return "builtin" }
func (unsafeTool) Tier() string                                        { return "builtin" }
func (unsafeTool) SafeToRepeat() bool                                  { return false }
func (unsafeTool) Prepare(context.Context, executor.Call) (any, error) { return nil, nil }
func (unsafeTool) Run(context.Context, executor.Call) executor.Result {
	return executor.Result{Output: json.RawMessage("{ \"ran\" : true,\n  \"html\": \"<b>&</b>\" }")}
}

// transparency is a ledger as serve runs it: an executor, and the
// projection engine with the read models and the Merkle log's sealer
// signing checkpoints; and what an auditor is given.
type transparency struct {
	db                 *testdb.DB
	alice, bob         *ledger.Client
	aliceSQL, carolSQL *testdb.Role
	execSQL            *testdb.Role
	auditor            []string // the environment of commands run as a ledger_auditor login
	logPub, attestPub  string   // the keys' public files
	logKey             note.Verifier
	pol                *policy.Engine
	signer             *attest.Signer
	exec               *executor.Executor
	stopExec, stopSeal func()
	executorConfig     executor.Config
	requests           []uuid.UUID
}

// startTransparency starts a ledger; with witnesses, a checkpoint is
// published once they have all cosigned it.
func startTransparency(t *testing.T, witnesses ...note.Verifier) *transparency {
	t.Helper()
	x := &transparency{db: testdb.New(t)}
	aliceRole := x.db.LoginRole(t, "alice", "ledger_submitter")
	bobRole := x.db.LoginRole(t, "bob", "ledger_submitter")
	x.carolSQL = x.db.LoginRole(t, "carol", "ledger_submitter", "ledger_approver")
	x.execSQL = x.db.LoginRole(t, "", "ledger_executor")
	x.aliceSQL = aliceRole
	x.alice, x.bob = ledger.NewClient(aliceRole.Pool), ledger.NewClient(bobRole.Pool)
	t.Cleanup(x.alice.Close)
	t.Cleanup(x.bob.Close)
	x.auditor = []string{"DATABASE_URL=" + x.db.LoginRole(t, "", "ledger_auditor").URL}

	dir := t.TempDir()
	logKey := filepath.Join(dir, "log.key")
	if _, err := ledger.GenerateNoteKey(transparencyOrigin, logKey); err != nil {
		t.Fatal(err)
	}
	noteSigner, err := ledger.LoadNoteSigner(logKey)
	if err != nil {
		t.Fatal(err)
	}
	x.logPub = logKey + ".pub"
	if x.logKey, err = ledger.LoadNoteVerifier(x.logPub); err != nil {
		t.Fatal(err)
	}
	attestKey := filepath.Join(dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(attestKey, attestKey+".pub"); err != nil {
		t.Fatal(err)
	}
	x.attestPub = attestKey + ".pub"
	if x.signer, err = attest.LoadSigner(attestKey); err != nil {
		t.Fatal(err)
	}
	if x.pol, err = policy.FromSources([]policy.Source{{Name: "test.cedar", Text: []byte(transparencyPolicy)}}); err != nil {
		t.Fatal(err)
	}
	x.executorConfig = executor.Config{Label: "transparency", Lease: 2 * time.Second, PollInterval: 200 * time.Millisecond,
		RescueInterval: 100 * time.Millisecond, ShutdownGrace: 300 * time.Millisecond, ToolTimeout: 700 * time.Millisecond,
		Sensitive: []string{"test.unsafe"}, ApprovalTimeout: 1500 * time.Millisecond}
	x.stopExec = x.startExecutor(t)

	sealer := ledger.NewSealer(ledger.SealerConfig{Signer: noteSigner, CheckpointInterval: 100 * time.Millisecond, Witnesses: witnesses})
	eng, err := projector.New(x.execSQL.Pool, projector.Config{PollInterval: 20 * time.Millisecond},
		append(projector.ReadModels(), projector.Sealer(sealer))...)
	if err != nil {
		t.Fatal(err)
	}
	x.stopSeal = runUntilStopped(t, "projection engine", eng.Run)
	return x
}

func (x *transparency) startExecutor(t *testing.T) func() {
	t.Helper()
	ex, err := executor.New(x.execSQL.Pool, x.executorConfig, x.pol, x.signer, slog.New(slog.DiscardHandler),
		executor.Echo{}, executor.Sleep{}, unsafeTool{})
	if err != nil {
		t.Fatal(err)
	}
	return runUntilStopped(t, "executor", ex.Run)
}

// runUntilStopped runs fn until stop is called or the test ends.
func runUntilStopped(t *testing.T, what string, fn func(context.Context) error) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s", what)
		}
	}
	t.Cleanup(stop)
	return stop
}

func (x *transparency) submit(t *testing.T, c *ledger.Client, p ledger.SubmitParams) uuid.UUID {
	t.Helper()
	id, err := c.Submit(context.Background(), p)
	if err != nil {
		t.Fatalf("submit %s: %v", p.Tool, err)
	}
	x.requests = append(x.requests, id)
	return id
}

func (x *transparency) sql(t *testing.T, r *testdb.Role, q string, args ...any) {
	t.Helper()
	if _, err := r.Pool.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func awaitFinal(t *testing.T, c *ledger.Client, id uuid.UUID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Await(ctx, id); err != nil {
		t.Fatalf("await %s: %v", id, err)
	}
}

func awaitState(t *testing.T, c *ledger.Client, id uuid.UUID, want ledger.State) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
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

// everyOutcome makes requests end in every way the executor and the SQL
// API end them (as executor's TestReadModelsRebuiltEqualLive does):
// success, a policy denial, invalid input, an exhausted and an ended
// run's budget, a timeout, approval granted, denied and expired, a cancel
// while awaiting approval and while running, a call stopped by its
// executor's shutdown, and rescues of an executor that vanished before
// and after its call started.
func (x *transparency) everyOutcome(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	x.sql(t, x.aliceSQL, "SELECT ledger.set_run_budget('r1', 2)")
	for i := range 3 {
		x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": strings.Repeat("a", i+1)}, RunID: "r1"})
	}
	x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "no run"}})
	x.submit(t, x.bob, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	x.submit(t, x.alice, ledger.SubmitParams{Tool: "no.such", Input: map[string]any{}})
	x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x", "extra": 1}})
	x.sql(t, x.aliceSQL, "SELECT ledger.end_run('r-ended', 'done')")
	x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "late"}, RunID: "r-ended"})
	x.submit(t, x.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 5000}, RunID: "r2"})

	granted := x.submit(t, x.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 1}})
	denied := x.submit(t, x.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 2}})
	expired := x.submit(t, x.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 3}})
	awaitingCancel := x.submit(t, x.alice, ledger.SubmitParams{Tool: "test.unsafe", Input: map[string]any{"n": 4}})
	for _, id := range []uuid.UUID{granted, denied, expired, awaitingCancel} {
		awaitState(t, x.alice, id, ledger.StateAwaitingApproval)
	}
	x.sql(t, x.carolSQL, "SELECT ledger.approve($1, 'fine')", granted)
	x.sql(t, x.carolSQL, "SELECT ledger.deny_approval($1, 'no')", denied)
	if ok, err := x.alice.Cancel(ctx, awaitingCancel, "changed my mind"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	running := x.submit(t, x.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 600}, RunID: "r2"})
	awaitState(t, x.alice, running, ledger.StateRunning)
	if ok, err := x.alice.Cancel(ctx, running, "stop"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, id := range x.requests {
		c := x.alice
		if id == x.requests[4] {
			c = x.bob
		}
		awaitFinal(t, c, id)
	}

	// A call still running when its executor shuts down.
	shutdown := x.submit(t, x.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 20000}})
	awaitState(t, x.alice, shutdown, ledger.StateRunning)
	x.stopExec()
	awaitFinal(t, x.alice, shutdown)

	// Rescues: claims of an executor that vanished before and after its
	// call began.
	for _, p := range []struct {
		tool    string
		started bool
	}{{"echo", false}, {"echo", true}, {"test.unsafe", true}} {
		id := x.submit(t, x.alice, ledger.SubmitParams{Tool: p.tool, Input: map[string]any{"text": "rescued"}})
		var got uuid.UUID
		if err := x.db.Pool.QueryRow(ctx, "SELECT id FROM ledger.claim_requests('ghost', 1, '1 millisecond')").Scan(&got); err != nil || got != id {
			t.Fatalf("the ghost claimed %s (%v), not %s", got, err, id)
		}
		if p.started {
			if _, err := x.db.Pool.Exec(ctx, "UPDATE ledger.queue SET started_at = now() WHERE id = $1", id); err != nil {
				t.Fatal(err)
			}
		}
	}
	x.stopExec = x.startExecutor(t)
}

// awaitSealed waits until every request is final and attested, and a
// published checkpoint holds all their events.
func (x *transparency) awaitSealed(t *testing.T) ledger.Checkpoint {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if cp, ok := x.sealed(t); ok {
			return cp
		}
		if time.Now().After(deadline) {
			t.Fatal("the requests were not all attested and sealed within 60s")
		}
	}
}

// sealed returns the newest published checkpoint when every request is
// final and attested and it holds all their events.
func (x *transparency) sealed(t *testing.T) (ledger.Checkpoint, bool) {
	t.Helper()
	ctx := context.Background()
	var open int
	if err := x.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.requests
WHERE attestation_digest IS NULL OR state NOT IN ('succeeded', 'failed', 'denied', 'cancelled')`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open > 0 {
		return ledger.Checkpoint{}, false
	}
	var need *int64
	if err := x.db.Pool.QueryRow(ctx, `SELECT CASE WHEN bool_and(l.leaf_index IS NOT NULL) THEN max(l.leaf_index) + 1 END
FROM ledger.events e LEFT JOIN ledger.log_leaves l ON l.position = e.position WHERE e.stream LIKE 'request:%'`).Scan(&need); err != nil {
		t.Fatal(err)
	}
	cp, err := ledger.NewestCheckpoint(ctx, x.db.Pool, true)
	return cp, err == nil && need != nil && cp.Size >= uint64(*need)
}

// TestTransparencyEndToEnd runs the executor through every outcome with
// the sealer signing checkpoints, then exports the whole log and one
// request, verifies both offline, verifies the live database, and
// proves a request's events one by one. It is what shows that the
// request grammar internal/bundle checks is the one the executor writes.
func TestTransparencyEndToEnd(t *testing.T) {
	t.Parallel()
	x := startTransparency(t)
	x.everyOutcome(t)
	sealed := x.awaitSealed(t)

	var kinds string
	if err := x.db.Pool.QueryRow(context.Background(), `SELECT string_agg(DISTINCT state || '/' || coalesce(error_kind, ''), ' '
    ORDER BY state || '/' || coalesce(error_kind, '')) FROM ledger.requests`).Scan(&kinds); err != nil {
		t.Fatal(err)
	}
	const want = "cancelled/cancelled denied/approval_denied denied/budget_exhausted denied/invalid_input denied/policy_denied " +
		"failed/outcome_unknown failed/timed_out succeeded/"
	if kinds != want {
		t.Errorf("outcomes:\n got %s\nwant %s", kinds, want)
	}

	dir := t.TempDir()
	keys := []string{"--log-key", x.logPub, "--attest-key", x.attestPub}
	full := filepath.Join(dir, "full.bundle")
	r := execute(t, x.auditor, "", "export", "--out", full)
	if r.code != exitOK || !strings.Contains(r.stdout, "exported the whole log") {
		t.Fatalf("export: %+v", r)
	}
	t.Logf("export:\n%s", r.stdout)
	rep := verifyJSON(t, append([]string{"verify", full, "--json"}, keys...), exitOK)
	if !rep.OK || rep.Requests != int64(len(x.requests)) || rep.Attestations != rep.Requests || rep.NewestSize < sealed.Size {
		t.Errorf("verify of the full bundle: %+v (%d requests, checkpoint %d)", rep, len(x.requests), sealed.Size)
	}
	r = execute(t, nil, "", append([]string{"verify", full}, keys...)...)
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, "log key "+bundle.Fingerprint(x.logKey)) {
		t.Errorf("verify: %+v", r)
	}

	// One request: the one denied by its approver, ended in SQL.
	one := x.requests[10]
	oneFile := filepath.Join(dir, "one.bundle")
	if r := execute(t, x.auditor, "", "export", "--request", one.String(), "--out", oneFile); r.code != exitOK {
		t.Fatalf("export --request: %+v", r)
	}
	rep = verifyJSON(t, append([]string{"verify", oneFile, "--json"}, keys...), exitOK)
	if !rep.OK || rep.Requests != 1 || rep.Attestations != 1 || rep.Scope == nil || rep.Scope.Request != one.String() {
		t.Errorf("verify of request %s's bundle: %+v", one, rep)
	}
	// Alice's requests.
	aliceFile := filepath.Join(dir, "alice.bundle")
	if r := execute(t, x.auditor, "", "export", "--principal", "alice", "--out", aliceFile); r.code != exitOK {
		t.Fatalf("export --principal: %+v", r)
	}
	rep = verifyJSON(t, append([]string{"verify", aliceFile, "--json"}, keys...), exitOK)
	if !rep.OK || rep.Requests != int64(len(x.requests)-1) {
		t.Errorf("verify of alice's bundle: %+v", rep)
	}
	// The README's example: a duration counts back from now, so the last
	// day's requests are --since 24h ...
	if r := execute(t, x.auditor, "", "export", "--principal", "alice", "--since", "24h", "--out", aliceFile, "--force"); r.code != exitOK ||
		strings.Contains(r.stderr, "WARNING") {
		t.Fatalf("export --since 24h: %+v", r)
	}
	rep = verifyJSON(t, append([]string{"verify", aliceFile, "--json"}, keys...), exitOK)
	if !rep.OK || rep.Requests != int64(len(x.requests)-1) || rep.Scope == nil || rep.Scope.Since == nil {
		t.Errorf("verify of alice's last day: %+v", rep)
	}
	// ... and --until 24h, before yesterday, matches none: export warns,
	// and verify does not say ok of a bundle that proves nothing.
	emptyFile := filepath.Join(dir, "empty.bundle")
	r = execute(t, x.auditor, "", "export", "--principal", "alice", "--until", "24h", "--out", emptyFile)
	if r.code != exitOK || !strings.Contains(r.stdout, ": 0 events") || !strings.Contains(r.stderr, "WARNING: no request matched") {
		t.Fatalf("export --until 24h: %+v", r)
	}
	rep = verifyJSON(t, append([]string{"verify", emptyFile, "--json"}, keys...), exitNotOK)
	if rep.OK || rep.Fault == nil || rep.Fault.Code != bundle.Empty || rep.Events != 0 {
		t.Errorf("verify --json of an empty bundle: %+v", rep)
	}
	r = execute(t, nil, "", append([]string{"verify", emptyFile}, keys...)...)
	if r.code != exitNotOK || !strings.HasPrefix(r.stdout, "not ok: ") || !strings.Contains(r.stdout, "holds no events: it proves nothing about the requests of principal alice") {
		t.Errorf("verify of an empty bundle: %+v", r)
	}

	r = execute(t, x.auditor, "", append([]string{"verify", "--db"}, keys...)...)
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, "read model: ") {
		t.Errorf("verify --db: %+v", r)
	}
	t.Logf("verify --db:\n%s", r.stdout)

	x.checkProofs(t, one)
	r = execute(t, x.auditor, "", "prove", one.String())
	if r.code != exitOK || !strings.Contains(r.stdout, "VERSION  TYPE") || !strings.Contains(r.stdout, "v1-tool.requested.tlog-proof") {
		t.Errorf("prove: %+v", r)
	}
	t.Logf("prove:\n%s", r.stdout)
	// The last request, rescued after its call started, was attested
	// long after the first checkpoint: its attestation names one.
	x.checkEnvelope(t, x.requests[len(x.requests)-1], "failed: outcome_unknown", dir)
}

// verifyJSON runs verify --json and decodes its report.
func verifyJSON(t *testing.T, args []string, code int) bundle.Report {
	t.Helper()
	r := execute(t, nil, "", args...)
	var rep bundle.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != code {
		t.Fatalf("%v: exit %d (want %d), %v\n%s%s", args, r.code, code, err, r.stdout, r.stderr)
	}
	return rep
}

// checkProofs proves request id's events and checks each proof as an
// auditor would, with the log key alone.
func (x *transparency) checkProofs(t *testing.T, id uuid.UUID) {
	t.Helper()
	dir := t.TempDir()
	r := execute(t, x.auditor, "", "prove", id.String(), "--out", dir, "--json")
	var evs []provedEvent
	if err := json.Unmarshal([]byte(r.stdout), &evs); err != nil || r.code != exitOK || len(evs) < 4 {
		t.Fatalf("prove: %v %+v", err, r)
	}
	stored, err := ledger.NewStore(x.db.Pool).ReadStream(context.Background(), "request:"+id.String(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(ev.File)))
		if err != nil || ev.Status != "proved" || string(b) != ev.Proof {
			t.Fatalf("event %d: %+v: %v", i, ev, err)
		}
		var p tlog.TLogProof
		if err := p.Unmarshal(b); err != nil {
			t.Fatalf("%s: %v", ev.File, err)
		}
		if !bytes.Equal(p.ExtraData, stored[i].Encoding()) || p.Index != *ev.LeafIndex {
			t.Errorf("%s: the proof's entry is not version %d's encoding at leaf %d", ev.File, stored[i].Version, *ev.LeafIndex)
		}
		n, err := note.Open(p.Checkpoint, note.VerifierList(x.logKey))
		if err != nil {
			t.Fatalf("%s: the checkpoint does not open with the log key: %v", ev.File, err)
		}
		var cp log.Checkpoint
		if _, err := cp.Unmarshal([]byte(n.Text)); err != nil || cp.Origin != transparencyOrigin {
			t.Fatalf("%s: checkpoint %q: %v", ev.File, n.Text, err)
		}
		hashes := make([][]byte, len(p.Hashes))
		for j := range p.Hashes {
			hashes[j] = p.Hashes[j][:]
		}
		leaf := rfc6962.DefaultHasher.HashLeaf(p.ExtraData)
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, p.Index, cp.Size, leaf, hashes, cp.Hash); err != nil {
			t.Errorf("%s: %v", ev.File, err)
		}
	}
}

// checkEnvelope verifies request id's attestation envelope as a file: it
// states outcome and names a checkpoint.
func (x *transparency) checkEnvelope(t *testing.T, id uuid.UUID, outcome, dir string) {
	t.Helper()
	var env string
	if err := x.db.Pool.QueryRow(context.Background(), `SELECT payload ->> 'envelope' FROM ledger.events
WHERE stream = $1 AND type IN ('attestation.signed', 'execution.completed')`, "request:"+id.String()).Scan(&env); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "attestation.json")
	if err := os.WriteFile(file, []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execute(t, nil, "", "verify", file, "--attest-key", x.attestPub)
	if r.code != exitOK || !strings.Contains(r.stdout, "ok: attestation of request "+id.String()) ||
		!strings.Contains(r.stdout, outcome) || !strings.Contains(r.stdout, "names log checkpoint") {
		t.Errorf("verify ATTESTATION.json: %+v", r)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	if _, err := attest.GenerateKeyFiles(other, other+".pub"); err != nil {
		t.Fatal(err)
	}
	r = execute(t, nil, "", "verify", file, "--attest-key", other+".pub", "--json")
	var rep envelopeReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitNotOK || rep.Code != bundle.UnknownKey ||
		rep.RequestID != id.String() {
		t.Errorf("verify ATTESTATION.json with another key: %v %+v", err, r)
	}
}

// TestVerifyRefusesWhatItWasNotGiven: a bundle checked with another
// attestation key or another log key, and a bundle cut short, are not ok.
func TestVerifyRefusesWhatItWasNotGiven(t *testing.T) {
	t.Parallel()
	x := startTransparency(t)
	id := x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "hi"}})
	awaitFinal(t, x.alice, id)
	x.awaitSealed(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "full.bundle")
	if r := execute(t, x.auditor, "", "export", "--out", file); r.code != exitOK {
		t.Fatalf("export: %+v", r)
	}
	if r := execute(t, x.auditor, "", "export", "--out", file); r.code != exitError || !strings.Contains(r.stderr, "--force") {
		t.Errorf("export over an existing file: %+v", r)
	}
	if r := execute(t, x.auditor, "", "export", "--out", file, "--force"); r.code != exitOK {
		t.Errorf("export --force: %+v", r)
	}
	rep := verifyJSON(t, []string{"verify", file, "--json", "--log-key", x.logPub, "--attest-key", x.attestPub}, exitOK)
	if !rep.OK || rep.Requests != 1 {
		t.Fatalf("verify: %+v", rep)
	}

	otherAttest := filepath.Join(dir, "other.key")
	if _, err := attest.GenerateKeyFiles(otherAttest, otherAttest+".pub"); err != nil {
		t.Fatal(err)
	}
	otherLog := filepath.Join(dir, "other-log.key")
	if _, err := ledger.GenerateNoteKey(transparencyOrigin, otherLog); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.bundle")
	if err := os.WriteFile(truncated, data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		file, log, att string
		code           string
	}{
		{"another attestation key", file, x.logPub, otherAttest + ".pub", bundle.UnknownKey},
		{"another log key", file, otherLog + ".pub", x.attestPub, bundle.UnknownKey},
		{"cut short", truncated, x.logPub, x.attestPub, bundle.Malformed},
	} {
		rep := verifyJSON(t, []string{"verify", tc.file, "--json", "--log-key", tc.log, "--attest-key", tc.att}, exitNotOK)
		if rep.OK || rep.Fault == nil || rep.Fault.Code != tc.code {
			t.Errorf("%s: %+v, want %s", tc.name, rep.Fault, tc.code)
		}
		r := execute(t, nil, "", "verify", tc.file, "--log-key", tc.log, "--attest-key", tc.att)
		if r.code != exitNotOK || !strings.HasPrefix(r.stdout, "not ok: "+tc.code) {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
	// verify --db with another attestation key finds the first
	// attestation it cannot check.
	r := execute(t, x.auditor, "", "verify", "--db", "--log-key", x.logPub, "--attest-key", otherAttest+".pub")
	if r.code != exitNotOK || !strings.HasPrefix(r.stdout, "not ok: unknown_key") {
		t.Errorf("verify --db with another attestation key: %+v", r)
	}
}

// TestExportProveVerifyErrors: what the commands say about bad flags, an
// unknown request, a log without a checkpoint and unreadable files.
func TestExportProveVerifyErrors(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	auditor := []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_auditor").URL}
	if err := db.MapPrincipal(context.Background(), "postgres", "cli"); err != nil {
		t.Fatal(err)
	}
	pending, err := ledger.Submit(context.Background(), db.Pool, ledger.SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "x.bundle")
	logKey := filepath.Join(dir, "log.key")
	if _, err := ledger.GenerateNoteKey(transparencyOrigin, logKey); err != nil {
		t.Fatal(err)
	}
	attestKey := filepath.Join(dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(attestKey, attestKey+".pub"); err != nil {
		t.Fatal(err)
	}
	notKey := filepath.Join(dir, "not-a-key")
	if err := os.WriteFile(notKey, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".present", []byte(`{"kind":"header"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"export without --out", []string{"export"}, exitUsage, "--out FILE"},
		{"export with a bad time", []string{"export", "--since", "yesterday", "--out", out}, exitUsage, "--since"},
		{"export of a request and a principal", []string{"export", "--request", uuid.NewString(), "--principal", "p", "--out", out}, exitUsage, "no other filter"},
		{"export of a bad request id", []string{"export", "--request", "nope", "--out", out}, exitUsage, "not a request id"},
		{"export of an unknown request", []string{"export", "--request", uuid.NewString(), "--out", out}, exitNotFound, "no request"},
		{"export before any checkpoint", []string{"export", "--out", out, "--wait", "0s"}, exitError,
			"the log has no published checkpoint yet: is serve running with [sealer] note_key_file?"},
		{"prove without an id", []string{"prove"}, exitUsage, "usage: execledger prove"},
		{"prove of an unknown request", []string{"prove", uuid.NewString()}, exitNotFound, "no request"},
		{"prove before any checkpoint", []string{"prove", pending.String()}, exitNoneSealed, "no event of request " + pending.String() + " is under a published checkpoint yet"},
		{"export of a request before any checkpoint", []string{"export", "--request", pending.String(), "--out", out, "--wait", "0s"}, exitError, "no published checkpoint yet"},
		{"verify without anything", []string{"verify"}, exitUsage, "usage: execledger verify"},
		{"verify --db and a file", []string{"verify", "--db", out, "--log-key", logKey + ".pub", "--attest-key", attestKey + ".pub"}, exitUsage, "usage"},
		{"verify without keys", []string{"verify", out + ".present"}, exitUsage, "--log-key and --attest-key"},
		{"verify a missing file", []string{"verify", out, "--log-key", logKey + ".pub", "--attest-key", attestKey + ".pub"}, exitError, "no such file"},
		{"verify with a bad log key", []string{"verify", out + ".present", "--log-key", notKey, "--attest-key", attestKey + ".pub"}, exitError, "--log-key"},
		{"verify with a bad attestation key", []string{"verify", out + ".present", "--log-key", logKey + ".pub", "--attest-key", notKey}, exitError, "--attest-key"},
		{"verify --db before any checkpoint", []string{"verify", "--db", "--wait", "0s", "--log-key", logKey + ".pub", "--attest-key", attestKey + ".pub"},
			exitError, "the log has no checkpoint yet"},
		{"verify --replay with a bundle", []string{"verify", "--replay", uuid.NewString(), out}, exitUsage, "usage"},
	} {
		r := execute(t, auditor, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed export left %s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(m) > 0 {
		t.Errorf("a failed export left %v", m)
	}
}

// TestExportWithAWitness: with a witness required, nothing is published
// until it cosigns (`execledger witness`); the bundle then carries its
// cosignature, which verify checks with --witness-key.
func TestExportWithAWitness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wkey := filepath.Join(dir, "witness.key")
	if _, err := ledger.GenerateWitnessKey("witness.test", wkey); err != nil {
		t.Fatal(err)
	}
	wpub, err := ledger.LoadWitnessVerifier(wkey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	x := startTransparency(t, wpub)
	id := x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "witnessed"}})
	awaitFinal(t, x.alice, id)
	for signed := false; !signed; time.Sleep(20 * time.Millisecond) {
		if err := x.db.Pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM ledger.checkpoints)").Scan(&signed); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "full.bundle")
	r := execute(t, x.auditor, "", "export", "--out", file, "--wait", "0s")
	if r.code != exitError || !strings.Contains(r.stderr, "await their witnesses' cosignatures") {
		t.Fatalf("export before the witness cosigned: %+v", r)
	}
	// The witness cosigns what it finds until a published checkpoint
	// holds the request.
	state := filepath.Join(dir, "witness.state")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, ok := x.sealed(t); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no cosigned checkpoint holds the request after 60s")
		}
		if r := execute(t, x.auditor, "", "witness", "--log-key", x.logPub, "--key", wkey, "--state", state, "--once"); r.code != exitOK {
			t.Fatalf("witness: %+v", r)
		}
	}
	if r := execute(t, x.auditor, "", "export", "--out", file); r.code != exitOK {
		t.Fatalf("export: %+v", r)
	}
	keys := []string{"--log-key", x.logPub, "--attest-key", x.attestPub}
	r = execute(t, nil, "", append([]string{"verify", file, "--witness-key", wkey + ".pub"}, keys...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "cosigned by 1 witnesses") {
		t.Errorf("verify --witness-key: %+v", r)
	}
	var h bundle.Header
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data[:bytes.IndexByte(data, '\n')], &h); err != nil || len(h.Keys.Witnesses) != 1 ||
		h.Keys.Witnesses[0] != bundle.Fingerprint(wpub) || h.Keys.Log != bundle.Fingerprint(x.logKey) {
		t.Errorf("the header's keys: %+v %v", h.Keys, err)
	}
	other := filepath.Join(dir, "other.key")
	if _, err := ledger.GenerateWitnessKey("other.test", other); err != nil {
		t.Fatal(err)
	}
	rep := verifyJSON(t, append([]string{"verify", file, "--json", "--witness-key", other + ".pub"}, keys...), exitNotOK)
	if rep.Fault == nil || rep.Fault.Code != bundle.BadSignature || !strings.Contains(rep.Fault.Message, "no valid cosignature from witness other.test") {
		t.Errorf("verify with a witness that did not cosign: %+v", rep.Fault)
	}
}
