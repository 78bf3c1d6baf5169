package executor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestDatabaseAway: startup waits for a database that restarts or cannot
// be reached, and not for one that refuses what it was asked.
func TestDatabaseAway(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		&pgconn.PgError{Code: "57P01"}:                         true, // terminating connection due to administrator command
		&pgconn.PgError{Code: "57P03"}:                         true, // the database system is starting up
		fmt.Errorf("read: %w", &pgconn.PgError{Code: "08006"}): true,
		&pgconn.ConnectError{}:                                 true,
		&pgconn.PgError{Code: "42501"}:                         false, // permission denied
		&pgconn.PgError{Code: "42P01"}:                         false, // no such table: not migrated
		errors.New("something else"):                           false,
	} {
		if got := databaseAway(err); got != want {
			t.Errorf("databaseAway(%v) = %v, want %v", err, got, want)
		}
	}
}
