package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ProcessState is the state of a background process (ledger.processes.state).
type ProcessState string

// Process states. Ended and lost are final.
const (
	ProcessRunning ProcessState = "running"
	ProcessEnded   ProcessState = "ended" // process.ended: it ended, or was killed, and its end is known
	ProcessLost    ProcessState = "lost"  // process.lost: its executor died and it was gone when looked for
)

// ProcessStarted is the payload of process.started, the first event of
// stream process:<handle>: everything the process's row starts from.
// ledger.process_start adds owner_role, the caller's login role.
type ProcessStarted struct {
	Handle     uuid.UUID `json:"handle"`
	RequestID  uuid.UUID `json:"request_id"`
	Principal  string    `json:"principal"`
	RunID      string    `json:"run_id"`
	Mode       string    `json:"mode"` // run_owned or detached
	Tier       string    `json:"tier"`
	Executor   string    `json:"executor"`
	Command    string    `json:"command"`
	Args       []string  `json:"args"`
	PID        int       `json:"pid"`
	PIDStart   uint64    `json:"pid_start"` // the pid's start time in clock ticks, against pid reuse
	Owner      string    `json:"owner"`     // the supervising executor process
	StartedAt  time.Time `json:"started_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	LifetimeMS int64     `json:"lifetime_ms"`
}

// Process is a row of ledger.processes.
type Process struct {
	Handle          uuid.UUID
	Principal       string
	RunID           string
	RequestID       uuid.UUID
	Mode            string
	Tier            string
	Command         string
	Owner           string
	PID             int
	PIDStart        uint64
	State           ProcessState
	StartedAt       time.Time
	ExpiresAt       time.Time
	StopRequestedAt *time.Time
	EndedAt         *time.Time
	EndReason       *string
	ExitCode        *int
	Signal          *int
	Result          json.RawMessage // the payload of the event that ended it
}

// ProcessStop is a running process its supervisor is to stop: a stop was
// requested (StopRequested), or it is run_owned and its run ended.
type ProcessStop struct {
	Handle        uuid.UUID
	StopRequested bool
}

// Processes records background processes through ledger.process_start
// and ledger.process_record, which append to their process:<handle>
// streams and apply the processes projection in the same transaction, and
// reads the ledger.processes read model. Its db is an executor's login.
type Processes struct {
	db DBTX
}

// NewProcesses returns Processes over db.
func NewProcesses(db DBTX) *Processes { return &Processes{db: db} }

const (
	processColumns = `handle, principal, run_id, request_id, mode, tier, command, owner, pid, pid_start, state,
       started_at, expires_at, stop_requested_at, ended_at, end_reason, exit_code, signal, result`

	queryProcessStart = `SELECT ledger.process_start($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

	queryProcessRecord = `SELECT ledger.process_record($1, $2, $3, $4, $5)`

	queryProcessesRunningInRun = `SELECT count(*) FROM ledger.processes
WHERE principal = $1 AND run_id = $2 AND state = 'running'`

	queryProcessesToStop = `SELECT p.handle, p.stop_requested_at IS NOT NULL
FROM ledger.processes p LEFT JOIN ledger.runs r USING (principal, run_id)
WHERE p.owner = $1 AND p.state = 'running'
  AND (p.stop_requested_at IS NOT NULL OR (p.mode = 'run_owned' AND r.ended_at IS NOT NULL))`

	queryProcessesRunningOwned = `SELECT ` + processColumns + ` FROM ledger.processes
WHERE state = 'running' AND starts_with(owner, $1) AND owner <> $2`

	queryProcess = `SELECT ` + processColumns + ` FROM ledger.processes
WHERE handle = $1 AND principal = $2 AND run_id = $3`
)

// Start records process.started with the process's row. The call's
// request (s.RequestID) must be running under a claim of the caller's
// login role; s must name its principal and run. Times are stored to the
// microsecond.
func (p *Processes) Start(ctx context.Context, s ProcessStarted, meta Metadata) error {
	s.StartedAt = s.StartedAt.Truncate(time.Microsecond).UTC()
	s.ExpiresAt = s.ExpiresAt.Truncate(time.Microsecond).UTC()
	payload, metadata, err := NewEvent{Type: "process.started", Payload: s, Metadata: meta}.Encode()
	if err != nil {
		return err
	}
	_, err = p.db.Exec(ctx, queryProcessStart, s.Handle, s.RequestID, s.Mode, s.Tier, s.Command, s.Owner, s.PID,
		int64(s.PIDStart), s.StartedAt, s.ExpiresAt, payload, metadata)
	if err != nil {
		return sqlError("process start", err)
	}
	return nil
}

// Record appends events (process.stop_requested, egress.connection,
// process.ended, process.lost) to handle's stream, under the row's lock so
// that its writers take turns, and returns the state the process was in
// before. The row changes as the events say; a process ends with its first
// process.ended or process.lost, whose payload carries end_reason,
// exit_code and signal. A stop needs stopRequest, a process.stop request
// of the process's principal and run that the caller's login holds; every
// other event needs the caller to be the login that started the process.
// A stop of a process already stopping or ended records nothing.
func (p *Processes) Record(ctx context.Context, handle, stopRequest uuid.UUID, events ...NewEvent) (ProcessState, error) {
	types := make([]string, len(events))
	payloads := make([]string, len(events))
	metas := make([]string, len(events))
	for i, ev := range events {
		pl, m, err := ev.Encode()
		if err != nil {
			return "", err
		}
		types[i], payloads[i], metas[i] = ev.Type, pl, m
	}
	var stop *uuid.UUID
	if stopRequest != uuid.Nil {
		stop = &stopRequest
	}
	var was ProcessState
	if err := p.db.QueryRow(ctx, queryProcessRecord, handle, types, payloads, metas, stop).Scan(&was); err != nil {
		return "", sqlError("process record", err)
	}
	return was, nil
}

// CountRunning counts the running processes of principal's run.
func (p *Processes) CountRunning(ctx context.Context, principal, runID string) (int, error) {
	var n int
	if err := p.db.QueryRow(ctx, queryProcessesRunningInRun, principal, runID).Scan(&n); err != nil {
		return 0, fmt.Errorf("ledger: count running processes: %w", err)
	}
	return n, nil
}

// ToStop lists owner's running processes that are to be stopped.
func (p *Processes) ToStop(ctx context.Context, owner string) ([]ProcessStop, error) {
	rows, err := p.db.Query(ctx, queryProcessesToStop, owner)
	if err != nil {
		return nil, fmt.Errorf("ledger: processes to stop: %w", err)
	}
	stops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ProcessStop, error) {
		var s ProcessStop
		err := row.Scan(&s.Handle, &s.StopRequested)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: processes to stop: %w", err)
	}
	return stops, nil
}

// Running lists the running processes whose owner starts with
// ownerPrefix, except those of exceptOwner.
func (p *Processes) Running(ctx context.Context, ownerPrefix, exceptOwner string) ([]Process, error) {
	rows, err := p.db.Query(ctx, queryProcessesRunningOwned, ownerPrefix, exceptOwner)
	if err != nil {
		return nil, fmt.Errorf("ledger: running processes: %w", err)
	}
	procs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Process, error) { return scanProcess(row) })
	if err != nil {
		return nil, fmt.Errorf("ledger: running processes: %w", err)
	}
	return procs, nil
}

// Get returns handle's row if it is a process of principal's run, and
// ErrNotFound (wrapped) if there is none.
func (p *Processes) Get(ctx context.Context, handle uuid.UUID, principal, runID string) (Process, error) {
	pr, err := scanProcess(p.db.QueryRow(ctx, queryProcess, handle, principal, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Process{}, fmt.Errorf("ledger: process %s: %w", handle, ErrNotFound)
	}
	if err != nil {
		return Process{}, fmt.Errorf("ledger: process %s: %w", handle, err)
	}
	return pr, nil
}

func scanProcess(row pgx.Row) (Process, error) {
	var pr Process
	var pidStart int64
	var result []byte
	err := row.Scan(&pr.Handle, &pr.Principal, &pr.RunID, &pr.RequestID, &pr.Mode, &pr.Tier, &pr.Command, &pr.Owner,
		&pr.PID, &pidStart, &pr.State, &pr.StartedAt, &pr.ExpiresAt, &pr.StopRequestedAt, &pr.EndedAt, &pr.EndReason,
		&pr.ExitCode, &pr.Signal, &result)
	pr.PIDStart = uint64(pidStart)
	if len(result) > 0 {
		pr.Result = result
	}
	return pr, err
}
