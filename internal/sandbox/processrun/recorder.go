//go:build linux

package processrun

import (
	"context"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
)

// Recorder is where background processes are recorded and looked up:
// their streams process:<handle> and the ledger.processes rows derived from
// them. *ledger.Processes, over a ledger_executor login, is the one
// implementation; the ledger checks that the login may write what it is
// given.
type Recorder interface {
	// Start records process.started.
	Start(ctx context.Context, s ledger.ProcessStarted, meta ledger.Metadata) error
	// Record appends events to a process's stream, stopRequest naming the
	// held process.stop request a process.stop_requested needs, and
	// returns the state the process was in.
	Record(ctx context.Context, handle, stopRequest uuid.UUID, events ...ledger.NewEvent) (ledger.ProcessState, error)
	// CountRunning counts the running processes of a run.
	CountRunning(ctx context.Context, principal, runID string) (int, error)
	// ToStop lists owner's running processes that are to be stopped.
	ToStop(ctx context.Context, owner string) ([]ledger.ProcessStop, error)
	// Running lists the running processes whose owner starts with
	// ownerPrefix, except exceptOwner's.
	Running(ctx context.Context, ownerPrefix, exceptOwner string) ([]ledger.Process, error)
	// Get returns a process of principal's run, or an error matching
	// ledger.ErrNotFound.
	Get(ctx context.Context, handle uuid.UUID, principal, runID string) (ledger.Process, error)
}
