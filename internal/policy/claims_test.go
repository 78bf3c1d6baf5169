package policy

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	cedar "github.com/cedar-policy/cedar-go"
)

// TestClaimsAreNotBoundValues: a claimed channel or device reaches Cedar
// only as claimed_channel / claimed_device; context.channel and
// context.device exist only when bound, so a policy that trusts them
// without testing the flag cannot be satisfied by a claim (issue 22).
func TestClaimsAreNotBoundValues(t *testing.T) {
	t.Parallel()
	naive := mustSources(t, "naive.cedar", `
		@id("laptop-only") permit (principal, action, resource) when { context.device == "laptop-1" };`)
	naiveChannel := mustSources(t, "naive-channel.cedar", `
		@id("cli-only") permit (principal, action, resource) when { context.channel == "cli" };`)
	hasDevice := mustSources(t, "has.cedar", `
		@id("laptop-only") permit (principal, action, resource) when { context has device && context.device == "laptop-1" };`)
	flagged := mustSources(t, "flagged.cedar", `
		@id("laptop-only") permit (principal, action, resource) when { context.device_bound && context.device == "laptop-1" };`)
	flagSecond := mustSources(t, "flag-second.cedar", `
		@id("anyone")      permit (principal, action, resource);
		@id("flag-second") permit (principal, action, resource) when { context.device == "laptop-1" && context.device_bound };`)
	flagFirst := mustSources(t, "flag-first.cedar", `
		@id("anyone")     permit (principal, action, resource);
		@id("flag-first") permit (principal, action, resource) when { context.device_bound && context.device == "laptop-1" };`)
	claimed := mustSources(t, "claimed.cedar", `
		@id("says-laptop") permit (principal, action, resource) when { context.claimed_device == "laptop-1" };
		@id("says-cli")    permit (principal, action, resource) when { context.claimed_channel == "cli" };`)
	forbidOff := mustSources(t, "forbid.cedar", `
		@id("anyone")         permit (principal, action, resource);
		@id("off-the-laptop") forbid (principal, action, resource) unless { context.device == "laptop-1" };`)

	claim := Request{Principal: "erin", Tool: "echo", Device: "laptop-1", Channel: "cli"}
	bound := Request{Principal: "erin", Tool: "echo", Device: "laptop-1", Channel: "cli", DeviceBound: true, ChannelBound: true}
	other := Request{Principal: "erin", Tool: "echo", Device: "phone", DeviceBound: true}
	none := Request{Principal: "erin", Tool: "echo"}
	allow := func(ids ...string) authorizeCase {
		return authorizeCase{allowed: true, reason: ReasonAllow, action: ActionToolExecute, determining: ids}
	}
	evalError := func(id string) authorizeCase {
		return authorizeCase{reason: ReasonEvaluationError, action: ActionToolExecute, determining: []string{id},
			errPrefixes: []string{"policy " + id + ": "}}
	}
	baseline := authorizeCase{reason: ReasonBaselineDeny, action: ActionToolExecute, determining: []string{}}
	for _, tc := range []struct {
		name string
		e    *Engine
		req  Request
		want authorizeCase
	}{
		{"the attack: a claimed device and a naive permit", naive, claim, evalError("laptop-only")},
		{"a bound device and a naive permit", naive, bound, allow("laptop-only")},
		{"another bound device and a naive permit", naive, other, baseline},
		{"no device and a naive permit", naive, none, evalError("laptop-only")},
		{"a claimed channel and a naive permit", naiveChannel, claim, evalError("cli-only")},
		{"a bound channel and a naive permit", naiveChannel, bound, allow("cli-only")},
		{"has: a claimed device", hasDevice, claim, baseline},
		{"has: a bound device", hasDevice, bound, allow("laptop-only")},
		{"the flag: a claimed device", flagged, claim, baseline},
		{"the flag: a bound device", flagged, bound, allow("laptop-only")},
		{"the flag second: a claim fails, beside another permit", flagSecond, claim, evalError("flag-second")},
		{"the flag first: a claim passes over it, beside another permit", flagFirst, claim, allow("anyone")},
		{"the flag first: a bound device", flagFirst, bound, allow("anyone", "flag-first")},
		{"claimed_*: a claim", claimed, claim, allow("says-cli", "says-laptop")},
		{"claimed_*: a bound value is claimed too", claimed, bound, allow("says-cli", "says-laptop")},
		{"claimed_*: another device", claimed, other, baseline},
		{"a failing forbid denies a claim", forbidOff, claim, evalError("off-the-laptop")},
		{"a forbid lets the bound device pass", forbidOff, bound, allow("anyone")},
		{"a forbid stops another bound device", forbidOff, other,
			authorizeCase{reason: ReasonDeny, action: ActionToolExecute, determining: []string{"off-the-laptop"}}},
	} {
		tc.want.name = tc.name
		checkDecision(t, tc.e, tc.want, tc.e.Authorize(tc.req))
	}
}

// TestEvaluationErrorIsNotSkipped: plain Cedar skips a policy that fails
// to evaluate, so a forbid reading the absent context.device would let a
// claim through another permit; the engine denies instead.
func TestEvaluationErrorIsNotSkipped(t *testing.T) {
	t.Parallel()
	e := mustSources(t, "forbid.cedar", `
		@id("anyone")         permit (principal, action, resource);
		@id("off-the-laptop") forbid (principal, action, resource) unless { context.device == "laptop-1" };`)
	r := Request{Principal: "erin", Tool: "echo", Device: "laptop-1"}
	plain, diag := cedar.Authorize(e.byAction[ActionToolExecute], r.entities(), cedar.Request{
		Principal: r.principalUID(), Action: cedar.NewEntityUID(actionType, ActionToolExecute), Resource: r.toolUID(), Context: r.context(),
	})
	if plain != cedar.Allow || len(diag.Errors) != 1 || !strings.Contains(diag.Errors[0].Message, "device") {
		t.Fatalf("plain Cedar: %v %+v; this test relies on it skipping the failing forbid", plain, diag)
	}
	if d := e.Authorize(r); d.Allowed || d.ReasonCode != ReasonEvaluationError {
		t.Errorf("the engine: %+v, want a denial with %s", d, ReasonEvaluationError)
	}
}

// TestOriginIsWhatCedarSees: Request.Origin, recorded in policy.decided,
// has exactly the channel and device keys and values of the Cedar context.
func TestOriginIsWhatCedarSees(t *testing.T) {
	t.Parallel()
	keys := []string{"channel", "device", "claimed_channel", "claimed_device", "channel_bound", "device_bound"}
	for _, r := range []Request{
		{Principal: "erin", Tool: "echo"},
		{Principal: "erin", Tool: "echo", Channel: "cli", Device: "laptop-1"},
		{Principal: "erin", Tool: "echo", Channel: "cli", ChannelBound: true, Device: "laptop-1"},
		{Principal: "erin", Tool: "echo", Channel: "cli", Device: "laptop-1", DeviceBound: true},
		{Principal: "erin", Tool: "echo", Channel: "cli", ChannelBound: true, Device: "laptop-1", DeviceBound: true},
	} {
		text, err := r.context().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var whole, fromCedar map[string]any
		if err := json.Unmarshal(text, &whole); err != nil {
			t.Fatal(err)
		}
		fromCedar = map[string]any{}
		for _, k := range keys {
			if v, ok := whole[k]; ok {
				fromCedar[k] = v
			}
		}
		if _, ok := fromCedar["device"]; ok != r.DeviceBound {
			t.Errorf("%+v: context.device present = %v", r, ok)
		}
		if _, ok := fromCedar["channel"]; ok != r.ChannelBound {
			t.Errorf("%+v: context.channel present = %v", r, ok)
		}
		if !maps.Equal(r.Origin(), fromCedar) {
			t.Errorf("%+v: Origin %v, Cedar context %v", r, r.Origin(), fromCedar)
		}
		if _, ok := r.entities().Get(cedar.NewEntityUID(deviceType, cedar.String(r.Device))); ok != r.DeviceBound {
			t.Errorf("%+v: Device entity present = %v", r, ok)
		}
	}
}
