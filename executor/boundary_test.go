package executor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// The executor's trust boundary, tried from outside: a login role holding
// only ledger_executor is trusted to run the calls it claims, not to
// rewrite history. Each attack below worked before migration 006.

// forgedAttestation is an unsigned envelope whose statement claims what
// the caller likes: SQL checks that an attestation names its request and
// agrees with the outcome, and auditors check the signature offline.
func forgedAttestation(t *testing.T, id uuid.UUID, success bool, kind string) map[string]any {
	t.Helper()
	st, err := json.Marshal(map[string]any{"predicate": map[string]any{"request_id": id.String(), "success": success, "error_kind": kind}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := json.Marshal(map[string]any{"payloadType": "application/vnd.in-toto+json",
		"payload": base64.StdEncoding.EncodeToString(st), "signatures": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(env)
	return map[string]any{"request_id": id, "attestation_digest": "sha256:" + hex.EncodeToString(sum[:]), "envelope": string(env)}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// head is the version of a request stream's last event.
func head(t *testing.T, e *env, id uuid.UUID) int64 {
	t.Helper()
	var v int64
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT max(version) FROM ledger.events WHERE stream = $1",
		"request:"+id.String()).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// ev is one event of a record call.
type ev = struct {
	typ     string
	payload any
}

// record calls ledger.executor_record as role r, in a transaction of its
// own, about request id under claim: events on its stream from version
// after+1, then the state change kind (nil for none) ending in state.
func record(t *testing.T, r *testdb.Role, id, claim uuid.UUID, after int64, events []ev, kind, state, errorKind *string) error {
	t.Helper()
	ctx := context.Background()
	var streams, types, payloads, metas []string
	var versions []int64
	for i, e := range events {
		streams, types = append(streams, "request:"+id.String()), append(types, e.typ)
		versions = append(versions, after+int64(i)+1)
		payloads = append(payloads, jsonText(t, e.payload))
		metas = append(metas, jsonText(t, map[string]any{"actor": "test", "correlation_id": id}))
	}
	tx, err := r.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT * FROM ledger.executor_record(ARRAY[$1::uuid], ARRAY[$2::uuid], $3, $4, $5, $6, $7,
ARRAY[$8::text], ARRAY[false], ARRAY[$9::text], ARRAY[$10::text], ARRAY[NULL::text], ARRAY['{"text":"x"}'], ARRAY['builtin'], NULL)`,
		id, claim, streams, versions, types, payloads, metas, kind, state, errorKind); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func mustRefuse(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted, want SQLSTATE %s", what, code)
	} else if !isSQLState(err, code) {
		t.Errorf("%s: %v, want SQLSTATE %s", what, err, code)
	}
}

func TestExecutorLoginCannotForgeOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	forger := e.db.LoginRole(t, "", "ledger_executor")

	// Another principal's request, denied and attested.
	denied := await(t, e.bob, submit(t, e.bob, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}, RunID: "r-forge"}))
	if denied.State != ledger.StateDenied {
		t.Fatalf("%+v", denied)
	}
	v := head(t, e, denied.ID)
	finished := map[string]any{"request_id": denied.ID, "state": "succeeded", "output": map[string]any{"text": "forged"}}
	meta := jsonText(t, map[string]any{"actor": "forger", "correlation_id": denied.ID})

	_, err := forger.Pool.Exec(ctx, `UPDATE ledger.request_status SET state = 'succeeded', error_kind = NULL, output = '{"text":"forged"}' WHERE id = $1`, denied.ID)
	mustRefuse(t, "UPDATE the request read model", err, "42501")
	_, err = forger.Pool.Exec(ctx, `UPDATE ledger.queue SET cancel_requested = true`)
	mustRefuse(t, "UPDATE the queue", err, "42501")
	_, err = forger.Pool.Exec(ctx, `SELECT * FROM ledger.append_events(ARRAY[$1], ARRAY[$2::bigint], ARRAY['execution.finished'], ARRAY[$3], ARRAY[$4])`,
		"request:"+denied.ID.String(), v+1, jsonText(t, finished), meta)
	mustRefuse(t, "append_events to a request stream", err, "42501")
	finish, succeeded := "finish", "succeeded"
	mustRefuse(t, "executor_record events about a final request",
		record(t, forger, denied.ID, uuid.New(), v, []ev{{"execution.finished", finished}}, nil, nil, nil), "42501")
	mustRefuse(t, "a second attestation for an attested request",
		record(t, forger, denied.ID, uuid.Nil, v, []ev{{"attestation.signed", forgedAttestation(t, denied.ID, true, "")}}, nil, nil, nil), "42501")
	mustRefuse(t, "executor_record finish of a final request",
		record(t, forger, denied.ID, uuid.New(), v, []ev{{"execution.finished", finished}, {"attestation.signed", forgedAttestation(t, denied.ID, true, "")}},
			&finish, &succeeded, nil), "42501")

	// Run budgets belong to their principals.
	_, err = forger.Pool.Exec(ctx, `UPDATE ledger.runs SET max_calls = 1000000 WHERE principal = 'bob'`)
	mustRefuse(t, "UPDATE a run budget", err, "42501")
	_, err = forger.Pool.Exec(ctx, `INSERT INTO ledger.runs (principal, run_id, max_calls) VALUES ('bob', 'r-new', 1000000)`)
	mustRefuse(t, "INSERT a run budget", err, "42501")
	_, err = forger.Pool.Exec(ctx, `SELECT * FROM ledger.append_events(ARRAY['run:bob/r-forge'], ARRAY[1::bigint], ARRAY['run.budget_set'], ARRAY['{"max_calls":1000000}'], ARRAY['{}'])`)
	mustRefuse(t, "append run.budget_set", err, "42501")
	_, err = forger.Pool.Exec(ctx, `SELECT * FROM ledger.append_events(ARRAY['channel:news'], ARRAY[1::bigint], ARRAY['channel.message'], ARRAY['{}'], ARRAY['{}'])`)
	mustRefuse(t, "append to a channel outside a claimed call", err, "42501")

	after, err := e.bob.Get(ctx, denied.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != ledger.StateDenied || after.Output != nil || *after.AttestationDigest != *denied.AttestationDigest || head(t, e, denied.ID) != v {
		t.Fatalf("the denied request changed: %+v", after)
	}
	e.verifyAttestation(t, after)
}

// TestClaimsBindTheirLoginRole: a claim is its login role's. Another
// executor login that reads the claim id cannot use it, and the holder
// itself can end the request only with an attestation that agrees.
func TestClaimsBindTheirLoginRole(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	e.db.ForgesEvents() // other logins try to write what only a claim holder may
	e.stop()
	ctx := context.Background()
	holder := e.db.LoginRole(t, "", "ledger_executor")
	other := e.db.LoginRole(t, "", "ledger_executor")
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	var claim uuid.UUID
	var v int64
	if err := holder.Pool.QueryRow(ctx, `SELECT id, claim_id, stream_version FROM ledger.claim_requests('holder', 1, '1 minute')`).Scan(new(uuid.UUID), &claim, &v); err != nil {
		t.Fatal(err)
	}
	finish, succeeded := "finish", "succeeded"
	appendAs := func(r *testdb.Role, typ string, payload any) error {
		return record(t, r, id, claim, v, []ev{{typ, payload}}, nil, nil, nil)
	}
	finishAs := func(r *testdb.Role, events []ev) error {
		return record(t, r, id, claim, v, events, &finish, &succeeded, nil)
	}
	finishedEv := ev{"execution.finished", map[string]any{"request_id": id, "state": "succeeded"}}

	mustRefuse(t, "another executor login appends under the claim", appendAs(other, "execution.finished", finishedEv.payload), "42501")
	mustRefuse(t, "another executor login finishes under the claim",
		finishAs(other, []ev{finishedEv, {"attestation.signed", forgedAttestation(t, id, true, "")}}), "42501")
	mustRefuse(t, "events only ledger functions write", appendAs(holder, "approval.granted", map[string]any{"request_id": id}), "42501")
	mustRefuse(t, "the holder finishes without an attestation", finishAs(holder, []ev{finishedEv}), "22023")
	mustRefuse(t, "the holder finishes with an attestation of another outcome",
		finishAs(holder, []ev{finishedEv, {"attestation.signed", forgedAttestation(t, id, false, "runtime_failure")}}), "22023")
	mustRefuse(t, "the holder's attestation comes before other events",
		finishAs(holder, []ev{{"attestation.signed", forgedAttestation(t, id, true, "")}, finishedEv}), "22023")
	mustRefuse(t, "the holder attaches an attestation of another request",
		finishAs(holder, []ev{finishedEv, {"attestation.signed", forgedAttestation(t, uuid.New(), true, "")}}), "22023")
	bad := forgedAttestation(t, id, true, "")
	bad["attestation_digest"] = "sha256:" + strings.Repeat("0", 64)
	mustRefuse(t, "the holder's attestation digest is not its envelope's",
		finishAs(holder, []ev{finishedEv, {"attestation.signed", bad}}), "22023")

	// The holder, with a matching attestation, may end it: executors are
	// trusted to run what they claim. The row carries that attestation.
	att := forgedAttestation(t, id, true, "")
	if err := finishAs(holder, []ev{finishedEv, {"attestation.signed", att}}); err != nil {
		t.Fatalf("the holder's own outcome: %v", err)
	}
	r, err := e.alice.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != ledger.StateSucceeded || r.AttestationDigest == nil || *r.AttestationDigest != att["attestation_digest"] {
		t.Fatalf("after the holder's finish: %+v", r)
	}
}

// TestForgedCancelNotificationIsIgnored: NOTIFY needs no privilege, so a
// role with no ledger grants at all can send ledger_request_cancel with
// any payload. The executor only looks at the cancel flags; the call runs
// on and succeeds.
func TestForgedCancelNotificationIsIgnored(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	e := setup(t, func(c *Config) { c.ToolTimeout = time.Hour }, b)
	ctx := context.Background()
	stranger := e.db.LoginRole(t, "")
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1500}})
	waitState(t, e.alice, id, ledger.StateRunning)
	for _, payload := range []string{id.String(), "", "*"} {
		if _, err := stranger.Pool.Exec(ctx, "SELECT pg_notify('ledger_request_cancel', $1)", payload); err != nil {
			t.Fatal(err)
		}
	}
	r := await(t, e.alice, id)
	if r.State != ledger.StateSucceeded {
		t.Fatalf("a forged cancel notification ended the call: %+v", r)
	}
	// The real thing still works, through ledger.cancel's own checks.
	// The call has no natural end and its timeout is an hour away: only
	// the cancellation can stop it.
	id = submit(t, e.alice, ledger.SubmitParams{Tool: "test.block", Input: map[string]any{}})
	waitEntered(t, b.entered)
	if ok, err := e.alice.Cancel(ctx, id, "stop"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if r := await(t, e.alice, id); r.State != ledger.StateCancelled {
		t.Fatalf("ledger.cancel: %+v", r)
	}
	if cause := <-b.cause; !errors.Is(cause, errCancelled) {
		t.Fatalf("the call was stopped by %v, not by the cancellation", cause)
	}
}

// TestNotificationsCarryNoIDsOnSharedChannels: any role that can connect
// may LISTEN on any channel. One with no ledger grants hears wake-ups on
// the shared channels, never a request id; a principal hears its own ids
// on its own channel, whose name others cannot derive.
func TestNotificationsCarryNoIDsOnSharedChannels(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	stranger := e.db.LoginRole(t, "")
	listen := func(r *testdb.Role, channels ...string) *pgx.Conn {
		conn, err := pgx.Connect(ctx, r.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		for _, ch := range channels {
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				t.Fatal(err)
			}
		}
		return conn
	}
	var aliceChannel, bobChannel string
	var strangerChannel *string
	if err := e.aliceSQL.Pool.QueryRow(ctx, "SELECT ledger.notify_channel()").Scan(&aliceChannel); err != nil {
		t.Fatal(err)
	}
	if err := e.bobSQL.Pool.QueryRow(ctx, "SELECT ledger.notify_channel()").Scan(&bobChannel); err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.Pool.Exec(ctx, "SELECT ledger.notify_channel()"); !isSQLState(err, "42501") {
		t.Errorf("a role without ledger grants computed a channel name: %v", err)
	}
	if err := e.execSQL.Pool.QueryRow(ctx, "SELECT ledger.notify_channel()").Scan(&strangerChannel); err != nil || strangerChannel != nil {
		t.Errorf("a login with no principal has channel %v (%v), want NULL", strangerChannel, err)
	}
	if aliceChannel == bobChannel || !strings.HasPrefix(aliceChannel, "ledger_done_") || strings.Contains(aliceChannel, "alice") {
		t.Fatalf("channels: alice %q, bob %q", aliceChannel, bobChannel)
	}
	if _, err := stranger.Pool.Exec(ctx, "SELECT * FROM ledger.notify_secret"); !isSQLState(err, "42501") {
		t.Errorf("the channel secret is readable: %v", err)
	}
	shared := listen(stranger, "ledger_request_pending", "ledger_request_done", "ledger_request_cancel")
	own := listen(e.aliceSQL, aliceChannel)

	// Completion, cancellation of a running call, cancellation of a pending one.
	done := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	await(t, e.alice, done)
	running := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 20000}})
	waitState(t, e.alice, running, ledger.StateRunning)
	if _, err := e.alice.Cancel(ctx, running, ""); err != nil {
		t.Fatal(err)
	}
	await(t, e.alice, running)
	e.stop()
	pending := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "y"}})
	if _, err := e.alice.Cancel(ctx, pending, ""); err != nil {
		t.Fatal(err)
	}

	// Every notification was sent before this point. Wait (long) until
	// both wake-ups have come, then take whatever else is already queued.
	heard := map[string]int{}
	for {
		wait := waitLong
		if heard["ledger_request_done"] > 0 && heard["ledger_request_cancel"] > 0 {
			wait = 500 * time.Millisecond
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		n, err := shared.WaitForNotification(wctx)
		cancel()
		if err != nil {
			break
		}
		heard[n.Channel]++
		if n.Payload != "" {
			t.Errorf("%s carried %q to a role with no grants", n.Channel, n.Payload)
		}
	}
	if heard["ledger_request_done"] == 0 || heard["ledger_request_cancel"] == 0 {
		t.Errorf("shared wake-ups heard: %v", heard)
	}
	got := map[string]bool{}
	for len(got) < 3 {
		wctx, cancel := context.WithTimeout(ctx, waitLong)
		n, err := own.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("alice's channel: heard %v, then %v", got, err)
		}
		got[n.Payload] = true
	}
	for _, id := range []uuid.UUID{done, running, pending} {
		if !got[id.String()] {
			t.Errorf("alice's channel did not carry %s: %v", id, got)
		}
	}
}

// TestApprovalBeforeClaim: an approver may approve a request no executor
// has claimed yet; it then runs without waiting. A denial before the
// claim ends it. A running request says why it cannot be approved.
func TestApprovalBeforeClaim(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Sensitive = []string{"sleep"} })
	e.stop()
	ctx := context.Background()
	early := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}})
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1, 'looked at it early')", early); err != nil {
		t.Fatalf("approve before the claim: %v", err)
	}
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1)", early); !isSQLState(err, "55000") {
		t.Errorf("a second approval: %v", err)
	}
	refused := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1}})
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.deny_approval($1, 'no')", refused); err != nil {
		t.Fatalf("deny before the claim: %v", err)
	}
	x, err := New(e.execSQL.Pool, Config{Label: "exec-again", Sensitive: []string{"sleep"}}, e.policy, e.signer,
		slog.New(slog.DiscardHandler), Echo{}, Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	e.start(t, x)
	if r := await(t, e.alice, early); r.State != ledger.StateSucceeded {
		t.Fatalf("approved early: %+v", r)
	}
	if strings.Contains(types(e.events(t, early)), "approval.requested") {
		t.Errorf("an approved request waited for approval: %s", types(e.events(t, early)))
	}
	if r := waitAttested(t, e, refused); r.State != ledger.StateDenied || *r.ErrorKind != ledger.KindApprovalDenied {
		t.Fatalf("denied early: %+v", r)
	}
	running := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	await(t, e.alice, running)
	_, err = e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1)", running)
	if !isSQLState(err, "55000") || !strings.Contains(err.Error(), "already ended") {
		t.Errorf("approving a finished request: %v", err)
	}
}

// TestClaimedContextIsNotBound: a caller may claim any channel and
// device; only values an administrator bound to its login role reach
// Cedar as context.channel / context.device. A policy written before
// issue 22, which tests the bound flag first, keeps its meaning: a claim
// cannot satisfy it. A bound role's requests carry the bound value, and a
// different claimed value is refused. (TestClaimedDeviceIsNotDevice has
// the policy that does not test the flag.)
func TestClaimedContextIsNotBound(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	claimer := db.LoginRole(t, "dave", "ledger_submitter")
	bound := db.LoginRole(t, "dave", "ledger_submitter")
	if _, err := db.Pool.Exec(ctx, "UPDATE ledger.principals SET channel = 'cli', device = 'laptop-1' WHERE login_role = $1", bound.Name); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.FromSources([]policy.Source{{Name: "ctx.cedar", Text: []byte(`
permit (principal, action == Action::"tool.execute", resource);
@id("echo-only-from-the-bound-cli")
forbid (principal, action, resource == Tool::"echo")
unless { context.channel_bound && context.channel == "cli" && context.device_bound && context.device == "laptop-1" };`)}})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(db.LoginRole(t, "", "ledger_executor").Pool, Config{Label: "ctx", PollInterval: 100 * time.Millisecond}, pol,
		attest.NewSigner(priv), slog.New(slog.DiscardHandler), Echo{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db}
	e.start(t, x)
	claimerC, boundC := ledger.NewClient(claimer.Pool), ledger.NewClient(bound.Pool)
	t.Cleanup(claimerC.Close)
	t.Cleanup(boundC.Close)

	claimed := await(t, claimerC, submit(t, claimerC, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"},
		Context: ledger.RequestContext{Channel: "cli", Device: "laptop-1"}}))
	if claimed.State != ledger.StateDenied || *claimed.ErrorKind != ledger.KindPolicyDenied {
		t.Fatalf("a claimed cli and device passed a bound-only rule: %+v", claimed)
	}
	ok := await(t, boundC, submit(t, boundC, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}}))
	if ok.State != ledger.StateSucceeded {
		t.Fatalf("the bound login: %+v", ok)
	}
	var payload struct {
		Context ledger.RequestContext `json:"context"`
		Bound   []string              `json:"context_bound"`
	}
	if err := json.Unmarshal(e.events(t, ok.ID)[0].Payload, &payload); err != nil || payload.Context.Channel != "cli" ||
		payload.Context.Device != "laptop-1" || strings.Join(payload.Bound, ",") != "channel,device" {
		t.Errorf("tool.requested of the bound login: %+v %v", payload, err)
	}
	if err := json.Unmarshal(e.events(t, claimed.ID)[0].Payload, &payload); err != nil || len(payload.Bound) != 0 {
		t.Errorf("tool.requested of the claiming login: %+v %v", payload, err)
	}
	_, err = boundC.Submit(ctx, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}, Context: ledger.RequestContext{Channel: "slack"}})
	if !errors.Is(err, ledger.ErrNotPermitted) || !strings.Contains(err.Error(), "bound") {
		t.Errorf("a bound login claiming another channel: %v", err)
	}
}

// TestUsageFiguresMustBeNumbers: an executor login cannot record usage
// the quota read model could not add up (a string for fuel, a byte count
// that is not an integer, allowed that is not a boolean). Such an event
// would stop the projection at it for good, rebuilds included.
func TestUsageFiguresMustBeNumbers(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	e.db.ForgesEvents() // a forger's figures, refused and accepted
	e.stop()
	ctx := context.Background()
	forger := e.db.LoginRole(t, "", "ledger_executor")
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	var claim uuid.UUID
	var v int64
	if err := forger.Pool.QueryRow(ctx, `SELECT claim_id, stream_version FROM ledger.claim_requests('forger', 1, '1 minute')`).Scan(&claim, &v); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ev   ev
	}{
		{"fuel as a string", ev{"execution.finished", map[string]any{"request_id": id, "state": "succeeded", "resources": map[string]any{"fuel_used": "lots"}}}},
		{"fuel too large", ev{"execution.finished", map[string]any{"request_id": id, "state": "succeeded", "resources": map[string]any{"fuel_used": 1e300}}}},
		{"resources as a list", ev{"execution.finished", map[string]any{"request_id": id, "state": "succeeded", "resources": []int{1}}}},
		{"allowed as a string", ev{"egress.connection", map[string]any{"host": "h", "allowed": "yes"}}},
		{"bytes as a fraction", ev{"egress.connection", map[string]any{"host": "h", "allowed": true, "bytes_up": 1.5}}},
	} {
		mustRefuse(t, tc.name, record(t, forger, id, claim, v, []ev{tc.ev}, nil, nil, nil), "22023")
	}
	// Sound figures pass.
	if err := record(t, forger, id, claim, v, []ev{{"egress.connection", map[string]any{"host": "h", "allowed": true, "bytes_up": 10, "bytes_down": 20}}}, nil, nil, nil); err != nil {
		t.Fatalf("a sound egress.connection: %v", err)
	}
}
