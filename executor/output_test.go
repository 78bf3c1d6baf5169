package executor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// spacedTool answers with output spelled with spaces and characters
// encoding/json escapes.
type spacedTool struct{}

func (spacedTool) Name() string                               { return "test.spaced" }
func (spacedTool) Executor() string                           { return "builtin" }
func (spacedTool) Tier() string                               { return "builtin" }
func (spacedTool) SafeToRepeat() bool                         { return true }
func (spacedTool) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (spacedTool) Run(context.Context, Call) Result {
	return Result{Output: json.RawMessage("{ \"html\" : \"<b>&</b>\",\n  \"n\": [1, 2] }")}
}

// TestAttestationSignsTheStoredOutput: the output subject of an
// attestation is the digest of the output bytes execution.finished
// stores, whatever the tool's spelling.
func TestAttestationSignsTheStoredOutput(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, spacedTool{})
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "test.spaced", Input: map[string]any{}})
	if r := await(t, e.alice, id); r.State != ledger.StateSucceeded {
		t.Fatalf("state %s: %v", r.State, r.Error)
	}
	var output, envelope []byte
	for _, ev := range e.events(t, id) {
		var p struct {
			Output   json.RawMessage `json:"output"`
			Envelope string          `json:"envelope"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "execution.completed" {
			output, envelope = p.Output, []byte(p.Envelope)
		}
	}
	st, err := attest.Verify(envelope, e.pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range st.Subject {
		if sub.Name == attest.SubjectOutput && "sha256:"+sub.Digest["sha256"] != attest.Digest(output) {
			t.Fatalf("the attestation's output subject %s is not the stored output's %s (%s)", sub.Digest["sha256"], attest.Digest(output), output)
		}
	}
}
