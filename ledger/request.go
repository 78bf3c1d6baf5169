package ledger

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/execledger/execledger/internal/contract"
	"github.com/google/uuid"
)

// State is where a request is in its life. The final states are
// Succeeded, Failed, Denied and Cancelled.
type State string

// The request states of the public contract (internal/contract).
const (
	StatePending          State = contract.StatePending
	StateAwaitingApproval State = contract.StateAwaitingApproval
	StateRunning          State = contract.StateRunning
	StateSucceeded        State = contract.StateSucceeded
	StateFailed           State = contract.StateFailed
	StateDenied           State = contract.StateDenied
	StateCancelled        State = contract.StateCancelled
)

// Final reports whether no further transition can happen.
func (s State) Final() bool { return contract.Final(string(s)) }

// States lists every state, in the order a request may pass through them.
var States = []State{StatePending, StateAwaitingApproval, StateRunning, StateSucceeded, StateFailed, StateDenied, StateCancelled}

// Valid reports whether s is one of States.
func (s State) Valid() bool { return slices.Contains(contract.States, string(s)) }

// ErrorKind says machine-readably why a request did not succeed.
type ErrorKind string

// The error kinds of the public contract (internal/contract).
const (
	KindInvalidInput         ErrorKind = contract.KindInvalidInput
	KindPolicyDenied         ErrorKind = contract.KindPolicyDenied
	KindBudgetExhausted      ErrorKind = contract.KindBudgetExhausted
	KindApprovalDenied       ErrorKind = contract.KindApprovalDenied
	KindSkillNotActive       ErrorKind = contract.KindSkillNotActive
	KindCapabilityDenied     ErrorKind = contract.KindCapabilityDenied
	KindWorkspaceScopeDenied ErrorKind = contract.KindWorkspaceScopeDenied
	KindEgressDenied         ErrorKind = contract.KindEgressDenied
	KindQuotaExceeded        ErrorKind = contract.KindQuotaExceeded
	KindTimedOut             ErrorKind = contract.KindTimedOut
	KindSpawnFailed          ErrorKind = contract.KindSpawnFailed
	KindRuntimeFailure       ErrorKind = contract.KindRuntimeFailure
	KindCancelled            ErrorKind = contract.KindCancelled
	KindOutcomeUnknown       ErrorKind = contract.KindOutcomeUnknown
)

// ErrorKinds lists every error kind of the contract.
var ErrorKinds = []ErrorKind{KindInvalidInput, KindPolicyDenied, KindBudgetExhausted, KindApprovalDenied, KindSkillNotActive,
	KindCapabilityDenied, KindWorkspaceScopeDenied, KindEgressDenied, KindQuotaExceeded, KindTimedOut, KindSpawnFailed,
	KindRuntimeFailure, KindCancelled, KindOutcomeUnknown}

// Valid reports whether k is one of ErrorKinds.
func (k ErrorKind) Valid() bool { return slices.Contains(contract.ErrorKinds, string(k)) }

// Request is one row of ledger.requests.
type Request struct {
	ID                uuid.UUID       `json:"id"`
	Principal         string          `json:"principal"`
	Tool              string          `json:"tool"`
	RunID             *string         `json:"run_id"`
	State             State           `json:"state"`
	ErrorKind         *ErrorKind      `json:"error_kind"`
	Error             *string         `json:"error"`
	Output            json.RawMessage `json:"output"`
	Tier              *string         `json:"tier"`
	AttestationDigest *string         `json:"attestation_digest"`
	SubmittedAt       time.Time       `json:"submitted_at"`
	FinishedAt        *time.Time      `json:"finished_at"`
}

// SubmitParams are the arguments of ledger.submit. The principal is not
// among them: the database takes it from the caller's login role.
type SubmitParams struct {
	Tool           string
	Input          any    // marshalled to a JSON object; json.RawMessage and []byte are used as is
	RunID          string // "" for none
	IdempotencyKey string // "" for none
	Context        RequestContext
}

// RequestContext is where a request comes from.
type RequestContext struct {
	Device  string `json:"device,omitempty"`
	Channel string `json:"channel,omitempty"`
	Session string `json:"session,omitempty"`
	// Traceparent and Tracestate are the submitter's span (W3C Trace
	// Context): the executor continues that trace, and every event of the
	// request carries its trace id. Submit fills them from the caller's
	// context when it carries a span and they are empty.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}
