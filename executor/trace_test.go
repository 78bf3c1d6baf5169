package executor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/execledger/execledger/ledger"
)

const (
	traceTestID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceTestParent = "00f067aa0ba902b7"
	traceTestHeader = "00-" + traceTestID + "-" + traceTestParent + "-01"
)

// noting is a tool that records an event of its own, which belongs to the
// run span.
type noting struct{}

func (noting) Name() string                               { return "test.noting" }
func (noting) Executor() string                           { return "builtin" }
func (noting) Tier() string                               { return "builtin" }
func (noting) SafeToRepeat() bool                         { return true }
func (noting) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (noting) Run(ctx context.Context, c Call) Result {
	return Result{Output: json.RawMessage(`{}`), Events: []Event{{Type: "capability.used", Payload: map[string]any{"capability": "test"}}}}
}

// tracedSetup is setup with an in-memory span exporter.
func tracedSetup(t *testing.T, mutate func(*Config)) (*env, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := setup(t, func(c *Config) {
		c.TracerProvider = tp
		if mutate != nil {
			mutate(c)
		}
	}, noting{})
	return e, exp
}

// requestSpans waits for the request span of id to end and returns the
// spans that carry its request id, by name.
func requestSpans(t *testing.T, exp *tracetest.InMemoryExporter, id uuid.UUID) map[string]tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		out := map[string]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			for _, a := range s.Attributes {
				if a.Key == attrRequestID && a.Value.AsString() == id.String() {
					out[s.Name] = s
				}
			}
		}
		if _, ok := out["execledger.request"]; ok {
			// The stage spans are children of the request span: those of
			// the request are in by the time it has ended.
			return stageSpans(exp, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request span for %s among %d spans", id, len(exp.GetSpans()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stageSpans adds the children of the request span to spans.
func stageSpans(exp *tracetest.InMemoryExporter, spans map[string]tracetest.SpanStub) map[string]tracetest.SpanStub {
	root := spans["execledger.request"].SpanContext.SpanID()
	for _, s := range exp.GetSpans() {
		if s.Parent.SpanID() == root {
			spans[s.Name] = s
		}
	}
	return spans
}

func metaOf(t *testing.T, ev ledger.Event) ledger.Metadata {
	t.Helper()
	var m ledger.Metadata
	if err := json.Unmarshal(ev.Metadata, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTraceparentMakesOneTrace: a request submitted with a traceparent is
// one trace, continued from the submitter's span: a request span and its
// claim, authorize, run and complete spans, and every event of the request
// carries the trace id and the id of the span it was written in.
func TestTraceparentMakesOneTrace(t *testing.T) {
	t.Parallel()
	e, exp := tracedSetup(t, nil)
	e.db.ForgesEvents() // test.noting records an event of its own making
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "test.noting", Input: map[string]any{},
		Context: ledger.RequestContext{Traceparent: traceTestHeader}})
	if r := await(t, e.alice, id); r.State != ledger.StateSucceeded {
		t.Fatalf("request %+v", r)
	}
	spans := requestSpans(t, exp, id)
	for _, name := range []string{"execledger.request", "execledger.claim", "execledger.authorize", "execledger.run", "execledger.complete"} {
		s, ok := spans[name]
		if !ok {
			t.Fatalf("no %s span; have %v", name, keys(spans))
		}
		if got := s.SpanContext.TraceID().String(); got != traceTestID {
			t.Errorf("%s is in trace %s, not the submitter's %s", name, got, traceTestID)
		}
	}
	root := spans["execledger.request"]
	if root.Parent.SpanID().String() != traceTestParent || !root.Parent.IsRemote() {
		t.Errorf("request span's parent %s (remote %v), want the submitter's %s", root.Parent.SpanID(), root.Parent.IsRemote(), traceTestParent)
	}
	run := spans["execledger.run"]
	attrs := map[string]string{}
	for _, a := range run.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["execledger.tier"] != "builtin" || attrs["execledger.tool"] != "test.noting" || attrs["execledger.outcome"] != "succeeded" {
		t.Errorf("run span attributes %v", attrs)
	}
	// The batch spans hold the transactions' queries and link to the
	// requests' stage spans.
	linked := map[string]bool{}
	for _, s := range exp.GetSpans() {
		if s.Name == "execledger.claim_batch" || s.Name == "execledger.complete_batch" {
			for _, l := range s.Links {
				linked[s.Name+" "+l.SpanContext.SpanID().String()] = true
			}
		}
	}
	if !linked["execledger.claim_batch "+spans["execledger.claim"].SpanContext.SpanID().String()] ||
		!linked["execledger.complete_batch "+spans["execledger.complete"].SpanContext.SpanID().String()] {
		t.Errorf("batch spans do not link to the request's claim and complete spans: %v", linked)
	}

	want := map[string]string{
		"tool.requested":      traceTestParent, // written by ledger.submit: the submitter's span
		"request.decided":     spans["execledger.authorize"].SpanContext.SpanID().String(),
		"capability.used":     spans["execledger.run"].SpanContext.SpanID().String(),
		"execution.completed": spans["execledger.complete"].SpanContext.SpanID().String(),
	}
	evs := e.events(t, id)
	if len(evs) != len(want) {
		t.Fatalf("events %s", types(evs))
	}
	for _, ev := range evs {
		m := metaOf(t, ev)
		if m.TraceID != traceTestID || m.SpanID != want[ev.Type] {
			t.Errorf("%s: trace %s span %s, want %s %s", ev.Type, m.TraceID, m.SpanID, traceTestID, want[ev.Type])
		}
	}
}

// TestTraceStartsWithoutTraceparent: with tracing on and no traceparent the
// executor starts the trace; the events it writes carry it.
func TestTraceStartsWithoutTraceparent(t *testing.T) {
	t.Parallel()
	e, exp := tracedSetup(t, nil)
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"}})
	await(t, e.alice, id)
	spans := requestSpans(t, exp, id)
	root := spans["execledger.request"]
	if root.Parent.IsValid() {
		t.Fatalf("request span has a parent %s", root.Parent.SpanID())
	}
	tid := root.SpanContext.TraceID().String()
	for _, ev := range e.events(t, id) {
		m := metaOf(t, ev)
		switch ev.Type {
		case "tool.requested", "request.claimed":
			if m.TraceID != "" {
				t.Errorf("%s has trace %s before any existed", ev.Type, m.TraceID)
			}
		default:
			if m.TraceID != tid || m.SpanID == "" {
				t.Errorf("%s: trace %q span %q, want trace %s", ev.Type, m.TraceID, m.SpanID, tid)
			}
		}
	}
}

// TestTraceIDsWithTracingOff: with no TracerProvider no span is made, but
// the events still carry the submitter's trace and span ids.
func TestTraceIDsWithTracingOff(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	id := submit(t, e.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "x"},
		Context: ledger.RequestContext{Traceparent: traceTestHeader}})
	await(t, e.alice, id)
	for _, ev := range e.events(t, id) {
		if m := metaOf(t, ev); m.TraceID != traceTestID || m.SpanID != traceTestParent {
			t.Errorf("%s: trace %q span %q", ev.Type, m.TraceID, m.SpanID)
		}
	}
	if e.exec.claimer.tracing.tracer != nil || e.exec.runner.tracing.tracer != nil || e.exec.completer.tracing.tracer != nil {
		t.Fatal("an executor without a TracerProvider has a tracer")
	}
}

// TestTraceThroughApprovalAndDenial: the events the database and the
// rescuer write (approval granted, the second claim, an approver's denial
// and its attestation) stay in the trace.
func TestTraceThroughApprovalAndDenial(t *testing.T) {
	t.Parallel()
	e, _ := tracedSetup(t, func(c *Config) { c.Sensitive = []string{"sleep"} })
	ctx := context.Background()
	granted := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1},
		Context: ledger.RequestContext{Traceparent: traceTestHeader}})
	denied := submit(t, e.alice, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 2},
		Context: ledger.RequestContext{Traceparent: traceTestHeader}})
	waitState(t, e.alice, granted, ledger.StateAwaitingApproval)
	waitState(t, e.alice, denied, ledger.StateAwaitingApproval)
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.approve($1)", granted); err != nil {
		t.Fatal(err)
	}
	if _, err := e.carolSQL.Pool.Exec(ctx, "SELECT ledger.deny_approval($1, 'no')", denied); err != nil {
		t.Fatal(err)
	}
	await(t, e.alice, granted)
	waitAttested(t, e, denied)
	for _, id := range []uuid.UUID{granted, denied} {
		evs := e.events(t, id)
		for _, ev := range evs {
			if m := metaOf(t, ev); m.TraceID != traceTestID || m.SpanID == "" {
				t.Errorf("%s %s: trace %q span %q", id, ev.Type, m.TraceID, m.SpanID)
			}
		}
		t.Logf("%s: %s", id, types(evs))
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
