package executor

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
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
	// Validate checks the input before anything is authorized or spent;
	// an error denies the request with error_kind invalid_input.
	Validate(input json.RawMessage) error
	// Run executes the call. It must return promptly once ctx is done.
	// A Result with an empty ErrorKind is a success.
	Run(ctx context.Context, call Call) Result
}

// Call is one execution of a tool.
type Call struct {
	RequestID uuid.UUID
	Attempt   int
	Principal string
	RunID     string
	Input     json.RawMessage
}

// Result is how a call ended.
type Result struct {
	Output     json.RawMessage  // a JSON object on success; may be set on failure too
	ErrorKind  string           // "" on success, else one of the contract's error kinds
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
func failure(kind, msg string) Result { return Result{ErrorKind: kind, Error: msg} }
