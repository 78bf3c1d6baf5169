package contract

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestSQLStateClasses: the database is away when it restarts or cannot be
// reached; work is worth repeating as it was when the database, not the
// work, failed; and not when the server refused what it was asked.
func TestSQLStateClasses(t *testing.T) {
	t.Parallel()
	type want struct{ away, transient bool }
	for err, w := range map[error]want{
		&pgconn.PgError{Code: "57P01"}:                         {true, true}, // terminating connection due to administrator command
		&pgconn.PgError{Code: "57P03"}:                         {true, true}, // the database system is starting up
		fmt.Errorf("read: %w", &pgconn.PgError{Code: "08006"}): {true, true},
		&pgconn.ConnectError{}:                                 {true, true},
		&pgconn.PgError{Code: "40001"}:                         {false, true},  // serialization failure
		&pgconn.PgError{Code: "40P01"}:                         {false, true},  // deadlock
		&pgconn.PgError{Code: "53300"}:                         {false, true},  // too many connections
		&pgconn.PgError{Code: "57014"}:                         {false, true},  // statement cancelled
		&pgconn.PgError{Code: "58030"}:                         {false, true},  // I/O error
		&pgconn.PgError{Code: "42501"}:                         {false, false}, // permission denied
		&pgconn.PgError{Code: "42P01"}:                         {false, false}, // no such table: not migrated
		&pgconn.PgError{Code: "23505"}:                         {false, false}, // unique violation
		&pgconn.PgError{Code: "P0001"}:                         {false, false}, // a ledger function's refusal
		errors.New("something else"):                           {false, false},
		nil:                                                    {false, false},
	} {
		if got := DatabaseAway(err); got != w.away {
			t.Errorf("DatabaseAway(%v) = %v, want %v", err, got, w.away)
		}
		if got := Transient(err); got != w.transient {
			t.Errorf("Transient(%v) = %v, want %v", err, got, w.transient)
		}
	}
}
