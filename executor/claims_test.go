package executor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// claimsPolicy is issue 22's naive policy (echo only from laptop-1, with
// no test of device_bound) beside one that reads a claim by its plain name.
const claimsPolicy = `
@id("echo-from-laptop-1")
permit (principal, action == Action::"tool.execute", resource == Tool::"echo")
when { context.device == "laptop-1" };

@id("sleep-when-claiming-cli")
permit (principal, action == Action::"tool.execute", resource == Tool::"sleep")
when { context.claimed_channel == "cli" };`

// recordedOrigin is what a request's events say of its channel and device.
type recordedOrigin struct {
	requested struct {
		Context ledger.RequestContext `json:"context"`
		Bound   []string              `json:"context_bound"`
	}
	decided struct {
		ReasonCode string         `json:"reason_code"`
		Origin     map[string]any `json:"origin"`
	}
}

func originOf(t *testing.T, e *env, id uuid.UUID) recordedOrigin {
	t.Helper()
	var o recordedOrigin
	var decided bool
	for _, ev := range e.events(t, id) {
		switch ev.Type {
		case "tool.requested":
			if err := json.Unmarshal(ev.Payload, &o.requested); err != nil {
				t.Fatal(err)
			}
		case "request.decided":
			decided = true
			if err := json.Unmarshal(ev.Payload, &o.decided); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !decided {
		t.Fatalf("request %s has no request.decided", id)
	}
	return o
}

// TestClaimedDeviceIsNotDevice is issue 22's finding 5: a login with no
// bound device that claims laptop-1 must not pass a policy testing
// context.device == "laptop-1" without also testing device_bound. The
// claim reaches Cedar only as context.claimed_device, so the naive policy
// fails to evaluate, which denies; a bound login passes; and both the
// claim and the bound value are on the record.
func TestClaimedDeviceIsNotDevice(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	claimer := db.LoginRole(t, "erin", "ledger_submitter")
	bound := db.LoginRole(t, "erin", "ledger_submitter")
	if _, err := db.Pool.Exec(ctx, "UPDATE ledger.principals SET device = 'laptop-1' WHERE login_role = $1", bound.Name); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.FromSources([]policy.Source{{Name: "claims.cedar", Text: []byte(claimsPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(db.LoginRole(t, "", "ledger_executor").Pool, Config{Label: "claims", PollInterval: 100 * time.Millisecond}, pol,
		attest.NewSigner(priv), slog.New(slog.DiscardHandler), Echo{}, Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db}
	e.start(t, x)
	claimerC, boundC := ledger.NewClient(claimer.Pool), ledger.NewClient(bound.Pool)
	t.Cleanup(claimerC.Close)
	t.Cleanup(boundC.Close)
	echo := func(c *ledger.Client, rc ledger.RequestContext) *ledger.Request {
		t.Helper()
		return await(t, c, submit(t, c, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}, Context: rc}))
	}

	// The attack: an unbound login claims the device.
	attack := echo(claimerC, ledger.RequestContext{Device: "laptop-1", Channel: "cli"})
	if attack.State != ledger.StateDenied || *attack.ErrorKind != ledger.KindPolicyDenied {
		t.Fatalf("a claimed device passed context.device == \"laptop-1\": %+v", attack)
	}
	o := originOf(t, e, attack.ID)
	if o.decided.ReasonCode != policy.ReasonEvaluationError {
		t.Errorf("the attack's reason code: %s, want %s", o.decided.ReasonCode, policy.ReasonEvaluationError)
	}
	if o.requested.Context.Device != "laptop-1" || o.requested.Context.Channel != "cli" || len(o.requested.Bound) != 0 {
		t.Errorf("tool.requested of the claim: %+v", o.requested)
	}
	wantClaim := map[string]any{"claimed_device": "laptop-1", "claimed_channel": "cli", "device_bound": false, "channel_bound": false}
	if !equalOrigin(o.decided.Origin, wantClaim) {
		t.Errorf("request.decided origin of the claim: %v, want %v", o.decided.Origin, wantClaim)
	}

	// The same device, bound to the login by an administrator.
	ok := echo(boundC, ledger.RequestContext{Device: "laptop-1"})
	if ok.State != ledger.StateSucceeded {
		t.Fatalf("the bound login: %+v", ok)
	}
	o = originOf(t, e, ok.ID)
	if o.requested.Context.Device != "laptop-1" || len(o.requested.Bound) != 1 || o.requested.Bound[0] != "device" {
		t.Errorf("tool.requested of the bound login: %+v", o.requested)
	}
	wantBound := map[string]any{"device": "laptop-1", "claimed_device": "laptop-1", "claimed_channel": "", "device_bound": true, "channel_bound": false}
	if !equalOrigin(o.decided.Origin, wantBound) {
		t.Errorf("request.decided origin of the bound login: %v, want %v", o.decided.Origin, wantBound)
	}

	// A policy may still read a claim, by its plain name.
	sleep := func(channel string) *ledger.Request {
		t.Helper()
		return await(t, claimerC, submit(t, claimerC, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1},
			Context: ledger.RequestContext{Channel: channel}}))
	}
	if r := sleep("cli"); r.State != ledger.StateSucceeded {
		t.Errorf("context.claimed_channel == \"cli\" with a claimed cli: %+v", r)
	}
	if r := sleep("slack"); r.State != ledger.StateDenied {
		t.Errorf("context.claimed_channel == \"cli\" with a claimed slack: %+v", r)
	} else if o := originOf(t, e, r.ID); o.decided.ReasonCode != policy.ReasonBaselineDeny {
		t.Errorf("a claimed slack: reason %s, want %s", o.decided.ReasonCode, policy.ReasonBaselineDeny)
	}
}

// equalOrigin compares a decoded origin with want, key by key.
func equalOrigin(got, want map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}
