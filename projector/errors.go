package projector

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnknownProjection: no projection of that name has ever run.
var ErrUnknownProjection = errors.New("projector: unknown projection")

// ErrMerkleLog: a rebuild or verify of the Merkle log's projection, whose
// leaves and nodes are what signed checkpoints commit to, not derived
// state: it is never rebuilt, and `execledger verify --db` checks it.
var ErrMerkleLog = errors.New("projector: the Merkle log is never rebuilt from the events")

// ErrNotFailed: Retry of a projection that is not failed.
var ErrNotFailed = errors.New("projector: projection is not failed")

// transient reports whether err, from work on conn, is worth trying again
// rather than a failure of the projection: a serialization failure or
// deadlock (the checkpoint moved, or an apply function raced a writer), a
// server shutting down or cancelling, or a connection that broke (its
// error says nothing about the event).
func transient(conn *pgx.Conn, err error) bool {
	if conn.IsClosed() || pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		class := pgErr.Code[:2]
		return pgErr.Code == "40001" || pgErr.Code == "40P01" || class == "08" || class == "57"
	}
	return false
}

// panicError is an apply function's panic, reported as its failure.
type panicError struct{ value any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }
