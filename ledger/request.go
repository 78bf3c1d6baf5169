package ledger

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"
)

// State is where a request is in its life. The final states are
// Succeeded, Failed, Denied and Cancelled.
type State string

// The request states of the public contract.
const (
	StatePending          State = "pending"
	StateAwaitingApproval State = "awaiting_approval"
	StateRunning          State = "running"
	StateSucceeded        State = "succeeded"
	StateFailed           State = "failed"
	StateDenied           State = "denied"
	StateCancelled        State = "cancelled"
)

// Final reports whether no further transition can happen.
func (s State) Final() bool {
	switch s {
	case StateSucceeded, StateFailed, StateDenied, StateCancelled:
		return true
	}
	return false
}

// States lists every state, in the order a request may pass through them.
var States = []State{StatePending, StateAwaitingApproval, StateRunning, StateSucceeded, StateFailed, StateDenied, StateCancelled}

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	return s == StatePending || s == StateAwaitingApproval || s == StateRunning || s.Final()
}

// ErrorKind says machine-readably why a request did not succeed.
type ErrorKind string

// The error kinds of the public contract.
const (
	KindInvalidInput         ErrorKind = "invalid_input"
	KindPolicyDenied         ErrorKind = "policy_denied"
	KindBudgetExhausted      ErrorKind = "budget_exhausted"
	KindApprovalDenied       ErrorKind = "approval_denied"
	KindSkillNotActive       ErrorKind = "skill_not_active"
	KindCapabilityDenied     ErrorKind = "capability_denied"
	KindWorkspaceScopeDenied ErrorKind = "workspace_scope_denied"
	KindEgressDenied         ErrorKind = "egress_denied"
	KindQuotaExceeded        ErrorKind = "quota_exceeded"
	KindTimedOut             ErrorKind = "timed_out"
	KindSpawnFailed          ErrorKind = "spawn_failed"
	KindRuntimeFailure       ErrorKind = "runtime_failure"
	KindCancelled            ErrorKind = "cancelled"
	KindOutcomeUnknown       ErrorKind = "outcome_unknown"
)

// ErrorKinds lists every error kind of the contract.
var ErrorKinds = []ErrorKind{KindInvalidInput, KindPolicyDenied, KindBudgetExhausted, KindApprovalDenied, KindSkillNotActive,
	KindCapabilityDenied, KindWorkspaceScopeDenied, KindEgressDenied, KindQuotaExceeded, KindTimedOut, KindSpawnFailed,
	KindRuntimeFailure, KindCancelled, KindOutcomeUnknown}

// Valid reports whether k is one of ErrorKinds.
func (k ErrorKind) Valid() bool { return slices.Contains(ErrorKinds, k) }

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
