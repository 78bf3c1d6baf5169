package procinput

import (
	"errors"
	"strconv"

	"github.com/execledger/execledger/ledger"
)

// Sentinels matching every *Error of a kind with errors.Is.
var (
	ErrInvalidInput         = errors.New(string(ledger.KindInvalidInput))
	ErrWorkspaceScopeDenied = errors.New(string(ledger.KindWorkspaceScopeDenied))
	ErrEgressDenied         = errors.New(string(ledger.KindEgressDenied))
	ErrCapabilityDenied     = errors.New(string(ledger.KindCapabilityDenied))

	// ErrInvalidPolicy reports a Policy that cannot be used; it is the
	// operator's mistake, not the request's, so it is not an *Error.
	ErrInvalidPolicy = errors.New("procinput: invalid policy")
)

// Error is a refusal of a request. Kind is one of the contract's error
// kinds (invalid_input, workspace_scope_denied, egress_denied or
// capability_denied),
// Reason a machine-readable code (the Reason constants), Message a
// sentence for the caller that says how to fix the request, and Err the
// underlying error, if any (an *fs.PathError, for instance).
type Error struct {
	Kind    ledger.ErrorKind
	Reason  string
	Message string
	Err     error
}

func (e *Error) Error() string {
	s := "procinput: " + e.Reason + ": " + e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrInvalidInput:
		return e.Kind == ledger.KindInvalidInput
	case ErrWorkspaceScopeDenied:
		return e.Kind == ledger.KindWorkspaceScopeDenied
	case ErrEgressDenied:
		return e.Kind == ledger.KindEgressDenied
	case ErrCapabilityDenied:
		return e.Kind == ledger.KindCapabilityDenied
	}
	return false
}

func invalid(reason, msg string) *Error {
	return &Error{Kind: ledger.KindInvalidInput, Reason: reason, Message: msg}
}

func scopeDenied(reason, msg string, err error) *Error {
	return &Error{Kind: ledger.KindWorkspaceScopeDenied, Reason: reason, Message: msg, Err: err}
}

func capabilityDenied(reason, msg string) *Error {
	return &Error{Kind: ledger.KindCapabilityDenied, Reason: reason, Message: msg}
}

func egressDenied(reason, msg string) *Error {
	return &Error{Kind: ledger.KindEgressDenied, Reason: reason, Message: msg}
}

// short quotes s for a message, cut to 80 bytes.
func short(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:77]) + "..."
	}
	return strconv.Quote(s)
}
