//go:build unix

package pgcluster

import (
	"errors"
	"fmt"
)

// ErrNoBinaries is returned (wrapped) by Start when the PostgreSQL server
// binaries cannot be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries not found (run scripts/ensure-postgres.sh to install them)")

// ErrAlreadyRunning is returned (wrapped in an *AlreadyRunningError) by Start
// when the data directory is in use by a running postmaster.
var ErrAlreadyRunning = errors.New("PostgreSQL server already running")

// AlreadyRunningError reports a data directory that is in use by a running
// postmaster. It matches ErrAlreadyRunning with errors.Is.
type AlreadyRunningError struct {
	DataDir string
	PID     int
	Port    int // 0 when postmaster.pid does not record it
}

func (e *AlreadyRunningError) Error() string {
	if e.Port == 0 {
		return fmt.Sprintf("pgcluster: data directory %s: %v (pid %d)", e.DataDir, ErrAlreadyRunning, e.PID)
	}
	return fmt.Sprintf("pgcluster: data directory %s: %v on port %d (pid %d)", e.DataDir, ErrAlreadyRunning, e.Port, e.PID)
}

// Is reports whether target is ErrAlreadyRunning.
func (e *AlreadyRunningError) Is(target error) bool { return target == ErrAlreadyRunning }
