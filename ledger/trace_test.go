package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

const (
	testTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	testSpanID  = "00f067aa0ba902b7"
	testParent  = "00-" + testTraceID + "-" + testSpanID + "-01"
)

// metadataOf reads the metadata of the first event of a request's stream.
func metadataOf(t *testing.T, s clientSetup, stream string) map[string]string {
	t.Helper()
	evs, err := NewStore(s.db.Pool).ReadStream(context.Background(), stream, 0, 10)
	if err != nil || len(evs) == 0 {
		t.Fatalf("read %s: %d events, %v", stream, len(evs), err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(evs[0].Metadata, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSubmitRecordsTheTraceparent: tool.requested carries the submitter's
// trace and span ids, and the queue row keeps them for the events the
// database writes later; without a traceparent the metadata has no trace
// members at all.
func TestSubmitRecordsTheTraceparent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{},
		Context: RequestContext{Traceparent: testParent, Tracestate: "vendor=x"}})
	if err != nil {
		t.Fatal(err)
	}
	m := metadataOf(t, s, "request:"+id.String())
	if m["trace_id"] != testTraceID || m["span_id"] != testSpanID {
		t.Fatalf("metadata %v", m)
	}
	var tid, sid string
	if err := s.db.Pool.QueryRow(ctx, "SELECT trace_id, trace_span_id FROM ledger.queue WHERE id = $1", id).Scan(&tid, &sid); err != nil {
		t.Fatal(err)
	}
	if tid != testTraceID || sid != testSpanID {
		t.Fatalf("queue row %s %s", tid, sid)
	}
	// A cancel while pending is written by the database: the same trace.
	if _, err := s.alice.Cancel(ctx, id, "no longer needed"); err != nil {
		t.Fatal(err)
	}
	evs, err := NewStore(s.db.Pool).ReadStream(ctx, "request:"+id.String(), 0, 10)
	if err != nil || len(evs) != 2 || evs[1].Type != "request.cancelled" {
		t.Fatalf("events %v, %v", evs, err)
	}
	if !strings.Contains(string(evs[1].Metadata), testTraceID) {
		t.Fatalf("request.cancelled metadata %s", evs[1].Metadata)
	}

	plain, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if m := metadataOf(t, s, "request:"+plain.String()); len(m) != 3 || m["trace_id"] != "" {
		t.Fatalf("metadata without a traceparent: %v", m)
	}
}

// TestSubmitTakesTheCallersSpan: a caller whose context carries a span
// need not write the traceparent itself.
func TestSubmitTakesTheCallersSpan(t *testing.T) {
	t.Parallel()
	s := setupClients(t)
	tid, _ := trace.TraceIDFromHex(testTraceID)
	sid, _ := trace.SpanIDFromHex(testSpanID)
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if m := metadataOf(t, s, "request:"+id.String()); m["trace_id"] != testTraceID || m["span_id"] != testSpanID {
		t.Fatalf("metadata %v", m)
	}
}

// TestSubmitRefusesAMalformedTraceparent: the W3C form, checked by the
// database for every caller.
func TestSubmitRefusesAMalformedTraceparent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupClients(t)
	for _, c := range []RequestContext{
		{Traceparent: strings.ToUpper(testParent)},                                 // upper case
		{Traceparent: "00-" + strings.Repeat("0", 32) + "-" + testSpanID + "-01"},  // zero trace id
		{Traceparent: "00-" + testTraceID + "-" + strings.Repeat("0", 16) + "-01"}, // zero span id
		{Traceparent: "ff-" + testTraceID + "-" + testSpanID + "-01"},              // version ff
		{Traceparent: testParent + "-extra"},                                       // version 00 has four fields
		{Traceparent: "00-" + testTraceID + "-" + testSpanID},                      // no flags
		{Traceparent: "junk"},
		{Tracestate: "vendor=x"},                          // tracestate alone
		{Traceparent: testParent, Tracestate: "v=\u00e9"}, // not ASCII
		{Traceparent: testParent, Tracestate: strings.Repeat("a", 513)},
	} {
		_, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{}, Context: c})
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "trace") {
			t.Errorf("context %+v: %v", c, err)
		}
	}
	// A later version's first four fields are read (the specification's
	// forward-compatibility rule).
	id, err := s.alice.Submit(ctx, SubmitParams{Tool: "echo", Input: map[string]any{},
		Context: RequestContext{Traceparent: "01-" + testTraceID + "-" + testSpanID + "-01-later"}})
	if err != nil {
		t.Fatal(err)
	}
	if m := metadataOf(t, s, "request:"+id.String()); m["trace_id"] != testTraceID {
		t.Fatalf("metadata %v", m)
	}
	if countRows(t, s.db, "ledger.queue") != 1 {
		t.Fatal("a refused submit left a queue row")
	}
}
