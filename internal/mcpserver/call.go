package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execledger/execledger/ledger"
)

// Outcome is a call's structured content: what the ledger recorded.
type Outcome struct {
	RequestID         string           `json:"request_id,omitempty"` // "" for a call refused before it was submitted
	RunID             string           `json:"run_id"`
	State             ledger.State     `json:"state"`
	ErrorKind         ledger.ErrorKind `json:"error_kind,omitempty"`
	Error             string           `json:"error,omitempty"`
	Tier              string           `json:"tier,omitempty"`
	AttestationDigest string           `json:"attestation_digest,omitempty"`
	Attestation       string           `json:"attestation,omitempty"` // the resource URI of the attestation
	Output            json.RawMessage  `json:"output,omitempty"`
}

// outputSchema describes Outcome for tools/list.
var outputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"request_id":{"type":"string"},"run_id":{"type":"string"},"state":{"type":"string"},"error_kind":{"type":"string"},` +
	`"error":{"type":"string"},"tier":{"type":"string"},"attestation_digest":{"type":"string"},"attestation":{"type":"string"},` +
	`"output":{}},"required":["run_id","state"]}`)

// metaRPCID is the _meta key under which lineTransport and stampHTTP
// put a tools/call's JSON-RPC id (the SDK does not hand it to handlers);
// whatever a client sent under it is overwritten.
const metaRPCID = "io.execledger/jsonrpc-id"

var traceparentRE = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// call is the tools/call handler of t: check the arguments, submit, wait
// for the final state with progress, and answer with the outcome.
func (ss *session) call(t *tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		if len(args) > t.maxInput {
			return ss.refusal(fmt.Sprintf("the arguments are %d bytes; %s takes at most %d. Nothing was submitted.", len(args), t.name, t.maxInput)), nil
		}
		if err := t.validate(args); err != nil {
			return ss.refusal(fmt.Sprintf("the arguments do not match %s's input schema: %v. Nothing was submitted.", t.name, err)), nil
		}
		params := ledger.SubmitParams{Tool: t.name, Input: args, RunID: ss.run,
			IdempotencyKey: ss.idempotencyKey(req), Context: ss.requestContext(req)}
		id, err := ss.p.client.Submit(context.WithoutCancel(ctx), params)
		if err != nil {
			if errors.Is(err, ledger.ErrInvalidInput) || errors.Is(err, ledger.ErrInputTooLarge) || errors.Is(err, ledger.ErrIdempotencyConflict) {
				return ss.refusal(fmt.Sprintf("the ledger refused the request: %v", err)), nil
			}
			return nil, fmt.Errorf("submit %s: %w", t.name, err)
		}
		return ss.await(ctx, req, id)
	}
}

// refusal is a tool error for a call refused before it was submitted:
// state "refused", no request id.
func (ss *session) refusal(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "invalid_input: " + msg}},
		StructuredContent: Outcome{RunID: ss.run, State: "refused", ErrorKind: ledger.KindInvalidInput, Error: msg}}
}

// idempotencyKey is the key of a call: its session's run and its JSON-RPC
// id, so that a client repeating a request id in the session gets the
// same request rather than a second one.
func (ss *session) idempotencyKey(req *mcp.CallToolRequest) string {
	id, ok := req.Params.Meta[metaRPCID]
	if !ok {
		return ""
	}
	b, err := json.Marshal(id)
	if err != nil || len(b) > 200 {
		return ""
	}
	return "mcp/" + ss.run + "/" + string(b)
}

// requestContext is where the call comes from, with the caller's trace
// (params._meta.traceparent, else the HTTP traceparent header) when it is
// a well-formed W3C traceparent.
func (ss *session) requestContext(req *mcp.CallToolRequest) ledger.RequestContext {
	rc := ledger.RequestContext{Channel: "mcp", Session: ss.run}
	tp, _ := req.Params.Meta["traceparent"].(string)
	ts, _ := req.Params.Meta["tracestate"].(string)
	if tp == "" && req.Extra != nil && req.Extra.Header != nil {
		tp, ts = req.Extra.Header.Get("traceparent"), req.Extra.Header.Get("tracestate")
	}
	if validTraceparent(tp) {
		rc.Traceparent = tp
		if len(ts) <= 512 {
			rc.Tracestate = ts
		}
	}
	return rc
}

// validTraceparent reports whether ledger.submit takes tp (migration
// 013's rule, version 00 only): a malformed one is dropped rather than
// failing the call.
func validTraceparent(tp string) bool {
	return len(tp) == 55 && traceparentRE.MatchString(tp) && tp[:2] == "00" &&
		tp[3:35] != strings.Repeat("0", 32) && tp[36:52] != strings.Repeat("0", 16)
}

// await waits for request id's final state, reporting its state as
// progress when the client asked for progress. A client's cancellation
// cancels the request (ledger.cancel); a client that goes away leaves it
// to run: it stays in the ledger, readable as a resource.
func (ss *session) await(ctx context.Context, req *mcp.CallToolRequest, id uuid.UUID) (*mcp.CallToolResult, error) {
	waitCtx, cancel := context.WithTimeout(ctx, ss.s.opts.CallTimeout)
	defer cancel()
	stop := ss.reportProgress(waitCtx, req, id)
	r, err := ss.p.client.Await(waitCtx, id)
	stop()
	if err == nil {
		return ss.result(r), nil
	}
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) && ss.base.Err() == nil:
		// notifications/cancelled: the client's cancellation is the ledger's.
		ok, cerr := ss.p.client.Cancel(context.WithoutCancel(ctx), id, "cancelled by the MCP client")
		ss.s.opts.Logger.Info("mcp call cancelled by the client", "request", id, "cancelled", ok, "err", cerr)
		return nil, ctx.Err()
	case ctx.Err() != nil:
		ss.s.opts.Logger.Info("mcp client gone before its call ended; the request goes on", "request", id, "cause", context.Cause(ctx))
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		r, gerr := ss.p.client.Get(context.WithoutCancel(ctx), id)
		if gerr != nil {
			return nil, gerr
		}
		res := ss.result(r)
		res.IsError = true
		res.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("request %s is still %s after %s; it goes on in the ledger (read it at %s).",
			id, r.State, ss.s.opts.CallTimeout, attestationURI(id))}}
		return res, nil
	}
	return nil, err
}

// reportProgress sends a progress notification at each state the request
// passes through (pending, awaiting_approval, running) until stop.
func (ss *session) reportProgress(ctx context.Context, req *mcp.CallToolRequest, id uuid.UUID) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last ledger.State
		step := 0
		for {
			if r, err := ss.p.client.Get(ctx, id); err == nil && r.State != last && !r.State.Final() {
				last, step = r.State, step+1
				msg := progressMessage(r.State, id)
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(step), Message: msg})
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(ss.s.opts.ProgressEvery):
			}
		}
	}()
	return func() { cancel(); <-done }
}

func progressMessage(s ledger.State, id uuid.UUID) string {
	switch s {
	case ledger.StatePending:
		return "pending: request " + id.String() + " waits for an executor"
	case ledger.StateAwaitingApproval:
		return "awaiting_approval: request " + id.String() + " waits for an approver (execledger approve " + id.String() + ")"
	case ledger.StateRunning:
		return "running: request " + id.String() + " runs in its sandbox"
	}
	return string(s)
}

// result is the answer to a call whose request ended as r.
func (ss *session) result(r *ledger.Request) *mcp.CallToolResult {
	o := Outcome{RequestID: r.ID.String(), RunID: ss.run, State: r.State, Output: r.Output}
	if r.ErrorKind != nil {
		o.ErrorKind = *r.ErrorKind
	}
	if r.Error != nil {
		o.Error = *r.Error
	}
	if r.Tier != nil {
		o.Tier = *r.Tier
	}
	if r.AttestationDigest != nil {
		o.AttestationDigest = *r.AttestationDigest
		o.Attestation = attestationURI(r.ID)
	}
	res := &mcp.CallToolResult{StructuredContent: o}
	if r.State == ledger.StateSucceeded {
		text := string(r.Output)
		if text == "" {
			text = "{}"
		}
		res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		return res
	}
	res.IsError = true
	res.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s (%s): %s %s", r.State, o.ErrorKind, plainWords(o.ErrorKind), o.Error)}}
	return res
}

// plainWords says what an error kind means to whoever reads the call's
// result (a model, mostly).
func plainWords(k ledger.ErrorKind) string {
	switch k {
	case ledger.KindInvalidInput:
		return "The arguments were refused."
	case ledger.KindPolicyDenied:
		return "The policy does not allow this call."
	case ledger.KindBudgetExhausted:
		return "This session's run has used all the calls its budget allows."
	case ledger.KindApprovalDenied:
		return "An approver refused the call, or no approver answered in time."
	case ledger.KindSkillNotActive:
		return "The skill is not enabled or no longer trusted."
	case ledger.KindCapabilityDenied, ledger.KindWorkspaceScopeDenied, ledger.KindEgressDenied:
		return "The sandbox refused what the call asked for."
	case ledger.KindQuotaExceeded:
		return "The call went over a quota."
	case ledger.KindTimedOut:
		return "The call ran out of time."
	case ledger.KindSpawnFailed, ledger.KindRuntimeFailure:
		return "The tool failed."
	case ledger.KindCancelled:
		return "The call was cancelled."
	case ledger.KindOutcomeUnknown:
		return "The executor stopped while the tool ran; whether it had an effect is unknown."
	}
	return "The call did not succeed."
}
