package projector

import (
	"errors"
	"fmt"

	"github.com/execledger/execledger/internal/contract"
	"github.com/jackc/pgx/v5"
)

// ErrUnknownProjection: no projection of that name has ever run.
var ErrUnknownProjection = errors.New("projector: unknown projection")

// ErrMerkleLog: a rebuild or verify of the Merkle log's projection, whose
// leaves and nodes are what signed checkpoints commit to, not derived
// state: it is never rebuilt, and `execledger verify --db` checks it.
var ErrMerkleLog = errors.New("projector: the Merkle log is never rebuilt from the events")

// ErrNotFailed: Retry of a projection that is not failed.
var ErrNotFailed = errors.New("projector: projection is not failed")

// panicError is an apply function's panic, reported as its failure.
type panicError struct{ value any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// transient reports whether err, from work on conn, is worth trying again
// rather than a failure of the projection: a connection that broke (its
// error says nothing about the event) or a failure of the database
// (contract.Transient: a serialization failure or deadlock when the
// checkpoint moved or an apply function raced a writer, a server shutting
// down, a cancelled statement).
func transient(conn *pgx.Conn, err error) bool {
	return conn.IsClosed() || contract.Transient(err)
}
