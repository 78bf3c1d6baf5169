package contract

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The SQLSTATE codes and classes the code reacts to by name. The ledger's
// own functions raise the codes of the SQL API's error table (DESIGN.md);
// these are the server's.
const (
	SQLStateSerializationFailure = "40001"
	SQLStateDeadlockDetected     = "40P01"
	SQLStateAdminShutdown        = "57P01"
	SQLStateCrashShutdown        = "57P02"
	SQLStateCannotConnectNow     = "57P03"
	SQLStateInsufficientPriv     = "42501"
	SQLStateUniqueViolation      = "23505"
	SQLStateNoDataFound          = "P0002"
	SQLStateWrongState           = "55000"
	SQLStateProgramLimit         = "54000"
	SQLStateInvalidParameter     = "22023"
	SQLStateNullNotAllowed       = "22004"
	SQLStateInvalidText          = "22P02"
	SQLStateCheckViolation       = "23514"
	SQLStateUndefinedObject      = "42704"
	SQLStateUndefinedTable       = "42P01"
	SQLStateUndefinedFunction    = "42883"
	SQLStateInvalidSchemaName    = "3F000"
	SQLStateReadOnlyTransaction  = "25006"

	classConnection           = "08" // connection exception
	classTransactionRollback  = "40" // serialization failure, deadlock, ...
	classResources            = "53" // insufficient resources: too many connections, disk full, out of memory
	classOperatorIntervention = "57" // query cancelled, server shutting down or starting
	classSystemError          = "58" // I/O error
)

// APIError is a condition the SQL API's functions raise, by the name a
// RAISE ... USING ERRCODE gives it and its SQLSTATE.
type APIError struct {
	Name, Code string
	// Meaning is what it says to a caller (DESIGN.md's error table).
	Meaning string
}

// APIErrors are the conditions the ledger's functions raise. A function
// that raises another fails this package's agreement test.
var APIErrors = []APIError{
	{"invalid_parameter_value", "22023", "an argument is invalid"},
	{"null_value_not_allowed", "22004", "a required argument is null"},
	{"data_exception", "22000", "an input or event is malformed"},
	{"string_data_right_truncation", "22001", "a text is longer than allowed"},
	{"program_limit_exceeded", "54000", "an input is larger than allowed"},
	{"insufficient_privilege", "42501", "the login may not do this"},
	{"unique_violation", "23505", "the idempotency key or name is taken"},
	{"no_data_found", "P0002", "no such request, run, skill or key"},
	{"object_not_in_prerequisite_state", "55000", "not in a state that allows it"},
	{"serialization_failure", "40001", "a concurrent write conflicts; try again"},
	{"undefined_object", "42704", "no such object (a projection, a log)"},
	{"feature_not_supported", "0A000", "not supported"},
	{"invalid_transaction_state", "25000", "not allowed inside this transaction"},
}

// APIErrorCode returns the SQLSTATE of the API condition named name.
func APIErrorCode(name string) (string, bool) {
	for _, e := range APIErrors {
		if e.Name == name || e.Code == name {
			return e.Code, true
		}
	}
	return "", false
}

// SQLState returns the SQLSTATE of the PostgreSQL error in err's chain, or
// "" when it holds none.
func SQLState(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// DatabaseAway reports whether err says the database cannot be reached or
// is not taking work yet: a connection that could not be made or was cut
// (pgx says so, or SQLSTATE class 08), or a server shutting down, crashed
// or starting (57P01–57P03). Work that failed so may be tried again on a
// new connection once the server is back.
func DatabaseAway(err error) bool {
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	switch code := SQLState(err); {
	case strings.HasPrefix(code, classConnection):
		return true
	case code == SQLStateAdminShutdown, code == SQLStateCrashShutdown, code == SQLStateCannotConnectNow:
		return true
	}
	return false
}

// Transient reports whether err is a failure of the database rather than
// of the work: DatabaseAway, a transaction rolled back by the server
// (serialization failure, deadlock: class 40), resources exhausted (53),
// an operator's intervention such as a cancelled statement (57) or an I/O
// error (58). Such work is worth trying again as it was; anything else
// (a constraint, a privilege, a missing object, the ledger's own refusals)
// fails the same way again.
func Transient(err error) bool {
	if DatabaseAway(err) {
		return true
	}
	code := SQLState(err)
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case classTransactionRollback, classResources, classOperatorIntervention, classSystemError:
		return true
	}
	return false
}
