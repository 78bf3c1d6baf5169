package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
)

// Tool is something an executor can run: a built-in, or a sandbox tier's
// runner. Implementations must be safe for concurrent use.
type Tool interface {
	// Name is the tool id requests name, e.g. "echo" or "process.run".
	Name() string
	// Executor is the label recorded in events and attestations, e.g.
	// "builtin" or "sandbox_tier_b".
	Executor() string
	// Tier is the sandbox tier: "builtin", "A", "B" or "C".
	Tier() string
	// SafeToRepeat reports whether running the tool twice for one request
	// does no harm, so that a request whose executor died mid-run may run
	// again instead of ending outcome_unknown. Result.StorageWrites do not
	// make a tool unsafe: they are written only with the outcome.
	SafeToRepeat() bool
	// Prepare checks a call by the tool's own rules (its input's shape
	// and limits; for process.run also the executable, the workspace scope
	// and egress) and readies what Run needs. It runs at claim time, in
	// the claim's transaction, once the policy has allowed the call and
	// before the run's budget is charged or execution.started recorded: an
	// error denies the request there, so a refused call consumes nothing.
	// A *Refusal names the error kind; any other error is invalid_input.
	// What Prepare returns reaches Run as Call.Prepared. It must not start
	// the call's work, and must be cheap: the claim's rows stay locked
	// while it runs.
	Prepare(ctx context.Context, call Call) (any, error)
	// Run executes the call. It must return promptly once ctx is done.
	// A Result with an empty ErrorKind is a success.
	Run(ctx context.Context, call Call) Result
}

// InlineTool is a Tool whose calls may run inside the claim's own
// transaction: they take microseconds, touch nothing outside the ledger,
// return no StorageWrites and are safe to repeat (SafeToRepeat). Such a
// call is claimed, decided, run and recorded with its attestation in one
// transaction (request.decided then execution.completed), instead of a
// claim, a run on a worker and a completion batch. A crash before the
// commit leaves nothing behind: the request is pending again and runs
// again, which is why it must be safe to repeat.
type InlineTool interface {
	Tool
	// RunsInline reports whether the tool's calls run in the claim.
	RunsInline() bool
}

// runsInline reports whether impl's calls run in the claim.
func runsInline(impl Tool) bool {
	t, ok := impl.(InlineTool)
	return ok && t.SafeToRepeat() && t.RunsInline()
}

// Refusal is Prepare's denial of a call: the request ends denied with
// error kind Kind, the message Message, and policy.decided records
// reason code "tool." + Kind and Reason as its tool_reason.
type Refusal struct {
	Kind    ledger.ErrorKind
	Reason  string // the tool's machine-readable cause, e.g. "path_outside_workspace"; may be empty
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Refused is the Result of a call Run had to prepare itself (Call.Prepared
// nil) and Prepare refused.
func Refused(err error) Result {
	r := refusalOf(err)
	return failure(r.Kind, r.Message)
}

// refusalOf is err as a Refusal: invalid_input unless it is one.
func refusalOf(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) && r.Kind != "" {
		return r
	}
	return &Refusal{Kind: ledger.KindInvalidInput, Message: err.Error()}
}

// Call is one execution of a tool.
type Call struct {
	RequestID uuid.UUID
	Attempt   int
	Principal string
	RunID     string
	Input     json.RawMessage
	// Prepared is what the tool's Prepare returned for this call (Run
	// only; nil in Prepare's own Call). A caller that runs a tool outside
	// an executor (a replay, a test) may leave it nil: the tool's Run then
	// prepares the call itself, and returns a refusal as its result.
	Prepared any
}

// Result is how a call ended.
type Result struct {
	Output     json.RawMessage  // a JSON object on success; may be set on failure too
	ErrorKind  ledger.ErrorKind // "" on success, else one of the contract's error kinds
	Error      string           // a human message when ErrorKind is set
	ExitStatus *int             // for processes
	TimedOut   bool             // the call hit its timeout
	Resources  map[string]int64 // usage, e.g. wall_ms, cpu_ms, fuel
	// Enforcement is the limits and isolation actually applied. The
	// executor only reads it; a tool may hand every call the same map.
	Enforcement map[string]any
	// StorageWrites are a tier A skill's storage_put writes: applied to
	// ledger.skill_storage in the transaction that records the outcome,
	// only when the call succeeded and the executor still holds its claim,
	// in order (the last write of a key wins, within a result and across
	// the results completed in one transaction). The executor drops them
	// for any failed result, so a call that fails, traps or times out
	// leaves no writes; a successful result with a key the table refuses
	// (empty, over 512 bytes, not UTF-8, holding NUL) becomes a
	// runtime_failure.
	StorageWrites []StorageWrite
	// Events are appended to the request's stream, in order, just before
	// its execution.finished (e.g. egress.connection records), in the same
	// transaction. Their payloads must marshal to JSON objects.
	Events []Event
}

// StorageWrite sets one key of ledger.skill_storage.
type StorageWrite struct {
	Key   string
	Value []byte
}

// Event is an event a tool asks to record about its call.
type Event struct {
	Type    string
	Payload any
	// Stream, when set, appends the event to that stream instead of the
	// request's, in the same transaction, after whatever the stream holds
	// then. Only channel streams ("channel:<name>") are allowed: a tier A
	// skill's published messages.
	Stream string `json:",omitempty"`
}

// failure builds a failed Result.
func failure(kind ledger.ErrorKind, msg string) Result { return Result{ErrorKind: kind, Error: msg} }

// State is the final state res puts its request in.
func (res Result) State() ledger.State {
	switch res.ErrorKind {
	case "":
		return ledger.StateSucceeded
	case ledger.KindCancelled:
		return ledger.StateCancelled
	}
	return ledger.StateFailed
}

// toolSet is the tools an executor runs, by id, and which of them wait
// for approval. The claimer and the rescuer look tools up in it; the
// metrics name tools by it.
type toolSet struct {
	byName    map[string]Tool
	sensitive map[string]bool
	// served are the tool ids installed skills have served (the Skills'
	// answers): metrics name them rather than "unknown".
	served sync.Map
}

func newToolSet(tools []Tool, sensitive []string) (*toolSet, error) {
	ts := &toolSet{byName: map[string]Tool{}, sensitive: map[string]bool{}}
	for _, t := range tools {
		if _, dup := ts.byName[t.Name()]; dup {
			return nil, fmt.Errorf("executor: tool %q registered twice", t.Name())
		}
		ts.byName[t.Name()] = t
	}
	for _, s := range sensitive {
		ts.sensitive[s] = true
	}
	return ts, nil
}

// get returns the registered tool named name, or nil.
func (ts *toolSet) get(name string) Tool { return ts.byName[name] }

// label is tool as a metric label: a registered tool's or an installed
// skill's id, else "unknown" (requests may name any tool; the label's
// values must stay bounded).
func (ts *toolSet) label(tool string) string {
	if _, ok := ts.byName[tool]; ok {
		return tool
	}
	if _, ok := ts.served.Load(tool); ok {
		return tool // an installed skill's: as bounded as what skill admins install
	}
	return "unknown"
}

// sensitiveJob reports whether j must wait for approval before it runs.
func (ts *toolSet) sensitiveJob(j *job) bool {
	return ts.sensitive[j.tool] || j.skill != nil && j.skill.RequiresApproval
}
