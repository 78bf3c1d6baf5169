package executor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/execledger/execledger/ledger"
)

// oddEvent records an event type the database does not take from a call.
type oddEvent struct{}

func (oddEvent) Name() string                               { return "test.odd_event" }
func (oddEvent) Executor() string                           { return "builtin" }
func (oddEvent) Tier() string                               { return "builtin" }
func (oddEvent) SafeToRepeat() bool                         { return true }
func (oddEvent) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (oddEvent) Run(context.Context, Call) Result {
	return Result{Output: json.RawMessage(`{}`), Events: []Event{{Type: "test.noted", Payload: map[string]any{}}}}
}

// TestUnacceptedToolEventFailsTheCall: a tool event of a type
// ledger.executor_record refuses ends its own call as a runtime_failure
// rather than failing the completion batch at every retry, which left the
// request running until its lease expired, and a safe-to-repeat one
// requeued for ever.
func TestUnacceptedToolEventFailsTheCall(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, oddEvent{})
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "test.odd_event", Input: map[string]any{}})
	r := await(t, e.alice, id)
	if r.State != ledger.StateFailed || r.ErrorKind == nil || *r.ErrorKind != "runtime_failure" {
		t.Fatalf("request %+v", r)
	}
}
