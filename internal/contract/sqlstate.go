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
