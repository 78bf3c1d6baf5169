package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/execledger/execledger/ledger"
)

// Tracing (OpenTelemetry).
//
// A submitter may pass its span as a W3C traceparent in the request's
// context (ledger.submit checks its form). Each request an executor claims
// gets a span, execledger.request, that continues that trace, or starts one
// when there is none, with a child span per stage: execledger.claim (the
// claim transaction), execledger.authorize, execledger.run (the tier run:
// tier, tool and outcome attributes) and execledger.complete (the
// completion transaction). Every event the executor writes about the
// request carries the trace id and the id of the stage span it was written
// in (Metadata.TraceID, Metadata.SpanID); those the database writes itself
// carry the traceparent's ids (migration 013).
//
// Claims and completions are batched: the database work of a batch is one
// transaction for many requests, so its query spans hang under a batch span
// (execledger.claim_batch, execledger.complete_batch) of its own trace, linked
// to each request's stage span, rather than under one request's.
//
// With no TracerProvider (the default) nothing of this runs except reading a
// traceparent that is present, so that events still carry the submitter's
// trace id: no spans, no allocations on the hot path.

// tracerName is the instrumentation scope of the executor's spans.
const tracerName = "github.com/execledger/execledger/executor"

// Attribute keys of the executor's spans.
const (
	attrRequestID = attribute.Key("execledger.request_id")
	attrTool      = attribute.Key("execledger.tool")
	attrTier      = attribute.Key("execledger.tier")
	attrAttempt   = attribute.Key("execledger.attempt")
	attrOutcome   = attribute.Key("execledger.outcome")
	attrErrorKind = attribute.Key("execledger.error_kind")
	attrDecision  = attribute.Key("execledger.decision")
	attrReason    = attribute.Key("execledger.reason_code")
	attrRequests  = attribute.Key("execledger.requests")
)

// jobTrace is one request's place in its trace.
type jobTrace struct {
	// parent is the submitter's span from the traceparent (invalid when
	// none was given).
	parent trace.SpanContext
	// root is execledger.request and rootCtx carries it; nil when tracing
	// is off.
	root    trace.Span
	rootCtx context.Context
	// sc is the span the job's events are written in: the current stage's,
	// or the submitter's when tracing is off.
	sc trace.SpanContext
	// run is the run span, which the events the tool recorded belong to.
	run trace.SpanContext
}

// toolSpan is the span the events a tool recorded are written in.
func (t *jobTrace) toolSpan() trace.SpanContext {
	if t.run.IsValid() {
		return t.run
	}
	return t.sc
}

// parseTraceparent reads the submitter's span from a request context.
func parseTraceparent(rc ledger.RequestContext) trace.SpanContext {
	if rc.Traceparent == "" {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{"traceparent": rc.Traceparent}
	if rc.Tracestate != "" {
		carrier["tracestate"] = rc.Tracestate
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

// tracing starts the executor's spans; a nil tracer turns it off.
type tracing struct{ tracer trace.Tracer }

// claimed starts the request span and the claim span of each claimed
// job, dated from when the claim began, and returns the claim spans (nil
// when tracing is off) and the batch span's context for the transaction's
// queries.
func (t tracing) claimed(ctx context.Context, jobs []*job, began time.Time) (context.Context, trace.Span, []trace.Span) {
	for _, j := range jobs {
		j.trace.parent = parseTraceparent(j.context)
		j.trace.sc = j.trace.parent
	}
	if t.tracer == nil {
		return ctx, nil, nil
	}
	claims := make([]trace.Span, len(jobs))
	links := make([]trace.Link, len(jobs))
	for i, j := range jobs {
		parent := context.Background()
		if j.trace.parent.IsValid() {
			parent = trace.ContextWithRemoteSpanContext(parent, j.trace.parent)
		}
		j.trace.rootCtx, j.trace.root = t.tracer.Start(parent, "execledger.request", trace.WithTimestamp(began),
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attrRequestID.String(j.id.String()), attrTool.String(j.tool), attrAttempt.Int(j.attempt)))
		_, claims[i] = t.tracer.Start(j.trace.rootCtx, "execledger.claim", trace.WithTimestamp(began))
		j.trace.sc = claims[i].SpanContext()
		links[i] = trace.Link{SpanContext: j.trace.sc}
	}
	bctx, batch := t.tracer.Start(ctx, "execledger.claim_batch", trace.WithTimestamp(began), trace.WithLinks(links...),
		trace.WithAttributes(attrRequests.Int(len(jobs))))
	return bctx, batch, claims
}

// authorize opens the job's authorize span; the events of its decision
// are written in it. The returned func ends it with the verdict and puts
// the job's events back in the claim span; calling it again does nothing.
func (t tracing) authorize(j *job) func(g gate) {
	if t.tracer == nil || j.trace.root == nil {
		return func(gate) {}
	}
	_, s := t.tracer.Start(j.trace.rootCtx, "execledger.authorize")
	claim := j.trace.sc
	j.trace.sc = s.SpanContext()
	ended := false
	return func(g gate) {
		if ended {
			return
		}
		ended = true
		j.trace.sc = claim
		decision := "allow"
		switch g.verdict {
		case verdictDeny:
			decision = "deny"
		case verdictAwaitApproval:
			decision = "await_approval"
		}
		s.SetAttributes(attrDecision.String(decision), attrReason.String(g.decision.ReasonCode))
		s.End()
	}
}

// endClaim ends the claim spans and, for a job that does not go on to run
// (denied, waiting for approval) or when the claim failed, its request span.
func endClaim(jobs []*job, batch trace.Span, claims []trace.Span, err error, toRun []*job) {
	if batch == nil {
		return
	}
	running := make(map[*job]bool, len(toRun))
	for _, j := range toRun {
		running[j] = true
	}
	now := time.Now()
	for i, j := range jobs {
		if err != nil {
			claims[i].SetStatus(codes.Error, err.Error())
		}
		claims[i].End(trace.WithTimestamp(now))
		if err != nil || !running[j] {
			j.trace.root.End(trace.WithTimestamp(now))
		}
	}
	if err != nil {
		batch.RecordError(err)
		batch.SetStatus(codes.Error, err.Error())
	}
	batch.End(trace.WithTimestamp(now))
}

// runContext is the context a job's tool runs in: it carries the job's run
// span, so that a tool's own spans and queries belong to the request's
// trace. The returned func ends the run span with the call's outcome.
func (t tracing) runContext(j *job) (context.Context, func(Result)) {
	if t.tracer == nil || j.trace.root == nil {
		return context.Background(), func(Result) {}
	}
	tier := ""
	if j.impl != nil {
		tier = j.impl.Tier()
	}
	ctx, s := t.tracer.Start(j.trace.rootCtx, "execledger.run",
		trace.WithAttributes(attrTool.String(j.tool), attrTier.String(tier)))
	j.trace.sc = s.SpanContext()
	j.trace.run = j.trace.sc
	return ctx, func(res Result) {
		s.SetAttributes(attrOutcome.String(string(res.State())))
		if res.ErrorKind != "" {
			s.SetAttributes(attrErrorKind.String(string(res.ErrorKind)))
			s.SetStatus(codes.Error, string(res.ErrorKind))
		}
		s.End()
	}
}

// complete opens the complete span of each job of a completion batch
// and a batch span for the transaction's queries; the returned func ends
// them all, and the request spans with them.
func (t tracing) complete(ctx context.Context, batch []outcome) (context.Context, func(error)) {
	if t.tracer == nil {
		return ctx, func(error) {}
	}
	var spans []trace.Span
	var links []trace.Link
	for _, o := range batch {
		j := o.job
		if j.trace.root == nil {
			continue
		}
		_, s := t.tracer.Start(j.trace.rootCtx, "execledger.complete",
			trace.WithAttributes(attrOutcome.String(string(o.result.State()))))
		j.trace.sc = s.SpanContext()
		spans = append(spans, s)
		links = append(links, trace.Link{SpanContext: j.trace.sc})
	}
	bctx, bs := t.tracer.Start(ctx, "execledger.complete_batch", trace.WithLinks(links...),
		trace.WithAttributes(attrRequests.Int(len(batch))))
	return bctx, func(err error) {
		for _, s := range spans {
			if err != nil {
				s.SetStatus(codes.Error, err.Error())
			}
			s.End()
		}
		if err != nil {
			bs.RecordError(err)
			bs.SetStatus(codes.Error, err.Error())
		}
		bs.End()
	}
}

// endRequest ends a job's request span once its outcome is written (or
// given up on).
func endRequest(j *job, res Result) {
	if j.trace.root == nil {
		return
	}
	outcomeAttributes(j, res)
	j.trace.root.End()
}

// outcomeAttributes puts res's outcome on j's request span.
func outcomeAttributes(j *job, res Result) {
	if j.trace.root == nil {
		return
	}
	j.trace.root.SetAttributes(attrOutcome.String(string(res.State())))
	if res.ErrorKind != "" {
		j.trace.root.SetAttributes(attrErrorKind.String(string(res.ErrorKind)))
	}
}

// traceMeta puts a span's ids in an event's metadata.
func traceMeta(m ledger.Metadata, sc trace.SpanContext) ledger.Metadata {
	if sc.IsValid() {
		m.TraceID, m.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	return m
}

// queryRequestTraces reads the trace ids tool.requested recorded (from the
// submitter's traceparent) for the requests the rescuer settles: one
// (stream, version) index probe each whatever the statistics say (LIMIT
// keeps the planner from turning the lateral lookup into a join over the
// log), on paths that run rarely.
const queryRequestTraces = `SELECT u.id, t.trace_id, t.span_id
FROM unnest($1::uuid[]) AS u(id)
JOIN LATERAL (SELECT e.metadata ->> 'trace_id' AS trace_id, e.metadata ->> 'span_id' AS span_id
              FROM ledger.events e WHERE e.stream = 'request:' || u.id AND e.version = 1 LIMIT 1) t ON true
WHERE t.trace_id IS NOT NULL AND t.span_id IS NOT NULL`

// requestTraces returns the submitters' spans of the requests that have
// one, for the events written about them outside a claim.
func requestTraces(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (map[uuid.UUID]trace.SpanContext, error) {
	rows, err := tx.Query(ctx, queryRequestTraces, ids)
	if err != nil {
		return nil, fmt.Errorf("request traces: %w", err)
	}
	defer rows.Close()
	out := map[uuid.UUID]trace.SpanContext{}
	for rows.Next() {
		var id uuid.UUID
		var tid, sid string
		if err := rows.Scan(&id, &tid, &sid); err != nil {
			return nil, fmt.Errorf("request traces: %w", err)
		}
		t, err1 := trace.TraceIDFromHex(tid)
		s, err2 := trace.SpanIDFromHex(sid)
		if err1 != nil || err2 != nil {
			continue // not ours to refuse here: ledger.submit checked the form
		}
		out[id] = trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, Remote: true})
	}
	return out, rows.Err()
}
