package procinput

import (
	"errors"
	"strconv"
)

// Error kinds: the class of a refusal, stable across releases.
const (
	KindInvalidInput         = "invalid_input"
	KindWorkspaceScopeDenied = "workspace_scope_denied"
	KindEgressDenied         = "egress_denied"
	KindCapabilityDenied     = "capability_denied"
)

// Sentinels matching every *Error of a kind with errors.Is.
var (
	ErrInvalidInput         = errors.New(KindInvalidInput)
	ErrWorkspaceScopeDenied = errors.New(KindWorkspaceScopeDenied)
	ErrEgressDenied         = errors.New(KindEgressDenied)
	ErrCapabilityDenied     = errors.New(KindCapabilityDenied)

	// ErrInvalidPolicy reports a Policy that cannot be used; it is the
	// operator's mistake, not the request's, so it is not an *Error.
	ErrInvalidPolicy = errors.New("procinput: invalid policy")
)

// Error is a refusal of a request. Kind is one of the Kind constants,
// Reason a machine-readable code (the Reason constants), Message a
// sentence for the caller that says how to fix the request, and Err the
// underlying error, if any (an *fs.PathError, for instance).
type Error struct {
	Kind    string
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
		return e.Kind == KindInvalidInput
	case ErrWorkspaceScopeDenied:
		return e.Kind == KindWorkspaceScopeDenied
	case ErrEgressDenied:
		return e.Kind == KindEgressDenied
	case ErrCapabilityDenied:
		return e.Kind == KindCapabilityDenied
	}
	return false
}

func invalid(reason, msg string) *Error {
	return &Error{Kind: KindInvalidInput, Reason: reason, Message: msg}
}

func scopeDenied(reason, msg string, err error) *Error {
	return &Error{Kind: KindWorkspaceScopeDenied, Reason: reason, Message: msg, Err: err}
}

func capabilityDenied(reason, msg string) *Error {
	return &Error{Kind: KindCapabilityDenied, Reason: reason, Message: msg}
}

func egressDenied(reason, msg string) *Error {
	return &Error{Kind: KindEgressDenied, Reason: reason, Message: msg}
}

// short quotes s for a message, cut to 80 bytes.
func short(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:77]) + "..."
	}
	return strconv.Quote(s)
}
