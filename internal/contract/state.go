package contract

import "slices"

// The request states. A request passes through some of the first three and
// ends in exactly one of the last four.
const (
	StatePending          = "pending"
	StateAwaitingApproval = "awaiting_approval"
	StateRunning          = "running"
	StateSucceeded        = "succeeded"
	StateFailed           = "failed"
	StateDenied           = "denied"
	StateCancelled        = "cancelled"
)

// States lists every request state, in the order a request may pass
// through them.
var States = []string{StatePending, StateAwaitingApproval, StateRunning, StateSucceeded, StateFailed, StateDenied, StateCancelled}

// FinalStates are the states no transition leaves.
var FinalStates = []string{StateSucceeded, StateFailed, StateDenied, StateCancelled}

// Final reports whether state is one of FinalStates.
func Final(state string) bool { return slices.Contains(FinalStates, state) }

// The error kinds: why a request did not succeed, machine-readably.
const (
	KindInvalidInput         = "invalid_input"
	KindPolicyDenied         = "policy_denied"
	KindBudgetExhausted      = "budget_exhausted"
	KindApprovalDenied       = "approval_denied"
	KindSkillNotActive       = "skill_not_active"
	KindCapabilityDenied     = "capability_denied"
	KindWorkspaceScopeDenied = "workspace_scope_denied"
	KindEgressDenied         = "egress_denied"
	KindQuotaExceeded        = "quota_exceeded"
	KindTimedOut             = "timed_out"
	KindSpawnFailed          = "spawn_failed"
	KindRuntimeFailure       = "runtime_failure"
	KindCancelled            = "cancelled"
	KindOutcomeUnknown       = "outcome_unknown"
)

// ErrorKinds lists every error kind.
var ErrorKinds = []string{KindInvalidInput, KindPolicyDenied, KindBudgetExhausted, KindApprovalDenied, KindSkillNotActive,
	KindCapabilityDenied, KindWorkspaceScopeDenied, KindEgressDenied, KindQuotaExceeded, KindTimedOut, KindSpawnFailed,
	KindRuntimeFailure, KindCancelled, KindOutcomeUnknown}
