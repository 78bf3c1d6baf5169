package ledger

import (
	"errors"
	"fmt"
	"strings"

	"github.com/execledger/execledger/internal/contract"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of the SQL API, translated from SQLSTATEs. Each is wrapped with the
// database's message, so errors.Is selects the kind and Error() says why.
var (
	// ErrInvalidInput: a NULL or malformed argument (SQLSTATE 22004, 22023).
	ErrInvalidInput = errors.New("invalid input")
	// ErrInputTooLarge: an argument over a hard cap (SQLSTATE 54000).
	ErrInputTooLarge = errors.New("input too large")
	// ErrNotPermitted: the login role is not mapped to a principal or lacks
	// the privilege (SQLSTATE 42501).
	ErrNotPermitted = errors.New("not permitted")
	// ErrIdempotencyConflict: an idempotency key reused for a different request (SQLSTATE 23505).
	ErrIdempotencyConflict = errors.New("idempotency key reused")
	// ErrNotFound: no such request, or none the caller may see (SQLSTATE P0002).
	ErrNotFound = errors.New("not found")
	// ErrConcurrency: an append lost an optimistic-concurrency race; see ConcurrencyError.
	ErrConcurrency = errors.New("concurrency conflict")
	// ErrWrongState: the request is not in a state that allows the call,
	// such as approving one that runs already (SQLSTATE 55000).
	ErrWrongState = errors.New("wrong state")
)

// ConcurrencyError is returned when a stream is not at the version an
// append expected: another writer appended first, or the expected version
// skips ahead of the stream.
type ConcurrencyError struct {
	Stream   string
	Expected int64
}

func (e *ConcurrencyError) Error() string {
	return fmt.Sprintf("ledger: stream %q is not at expected version %d", e.Stream, e.Expected)
}

// Is makes errors.Is(err, ErrConcurrency) hold.
func (e *ConcurrencyError) Is(target error) bool { return target == ErrConcurrency }

// InvalidEventError is returned for an event the log would refuse: a
// payload that is not a JSON object, a malformed type or stream name.
type InvalidEventError struct {
	Type   string
	Reason string
	Err    error // the database's error, when it refused the event
}

func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("ledger: invalid event %q: %s", e.Type, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (e *InvalidEventError) Is(target error) bool { return target == ErrInvalidInput }

// Unwrap returns the database's error, if any.
func (e *InvalidEventError) Unwrap() error { return e.Err }

// sqlError translates a driver error into the package's errors, keeping
// the database's message. Errors that are not the API's pass through wrapped.
func sqlError(op string, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("ledger: %s: %w", op, err)
	}
	var kind error
	switch pgErr.Code {
	case contract.SQLStateNullNotAllowed, contract.SQLStateInvalidParameter, contract.SQLStateInvalidText, contract.SQLStateCheckViolation:
		kind = ErrInvalidInput
	case contract.SQLStateProgramLimit:
		kind = ErrInputTooLarge
	case contract.SQLStateInsufficientPriv:
		kind = ErrNotPermitted
	case contract.SQLStateUniqueViolation:
		kind = ErrIdempotencyConflict
	case contract.SQLStateNoDataFound:
		kind = ErrNotFound
	case contract.SQLStateWrongState:
		kind = ErrWrongState
	default:
		return fmt.Errorf("ledger: %s: %w", op, err)
	}
	// The API's functions begin their messages with their own name
	// ("ledger.submit: tool must be …"), which op already says.
	msg := strings.TrimPrefix(pgErr.Message, "ledger."+strings.ReplaceAll(op, " ", "_")+": ")
	return &apiError{msg: fmt.Sprintf("ledger: %s: %s: %s", op, kind, msg), kind: kind, pg: pgErr}
}

// apiError is a refusal of the SQL API: errors.Is selects its kind, and
// errors.As still finds the database's error (its SQLSTATE, its hint).
type apiError struct {
	msg  string
	kind error
	pg   *pgconn.PgError
}

func (e *apiError) Error() string { return e.msg }

func (e *apiError) Unwrap() []error { return []error{e.kind, e.pg} }

// IsRetryable reports whether err is a serialization failure or deadlock
// (SQLSTATE 40001, 40P01): the transaction may succeed if run again.
func IsRetryable(err error) bool {
	code := contract.SQLState(err)
	return code == contract.SQLStateSerializationFailure || code == contract.SQLStateDeadlockDetected
}
