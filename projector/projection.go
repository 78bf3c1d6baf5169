package projector

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// ApplyFunc applies one event to a read model inside the engine's
// transaction, which also advances the checkpoint. It must not commit or
// roll back tx. An error (or a panic) stops the projection at ev.
type ApplyFunc func(ctx context.Context, tx pgx.Tx, ev ledger.Event) error

// BatchFunc applies a whole batch, the events after from in delivery
// order, inside the engine's transaction, and moves the projection's
// checkpoint itself (in its own SQL, which checks from). An error with an
// EventIndex() int method names the event of the batch that fails; the
// engine then commits the events before it alone, and stops the
// projection at it.
type BatchFunc func(ctx context.Context, tx pgx.Tx, from ledger.Cursor, events []ledger.Event) error

// TickFunc runs between batches (and while there are none) on the
// connection that holds the projection's lock, outside any transaction.
type TickFunc func(ctx context.Context, conn *pgx.Conn) error

// Projection is a read model's definition: its name (the row in
// ledger.projections, and stream projection:<name> for its own events) and
// either one Go apply function per event type it consumes, or SQL: the
// ledger's own apply function for the projection, ledger.apply_<name>,
// which reads each batch's events in the database and is called through
// ledger.projection_step (migration 008). Events of other types only move
// its checkpoint.
type Projection struct {
	Name  string
	Apply map[string]ApplyFunc
	// SQL marks a projection the ledger defines (ReadModels); Apply is then
	// empty.
	SQL bool
	// Batch, when set, takes whole batches instead of Apply (the Merkle
	// log's sealer, see Sealer); Tick, optional, runs between them.
	Batch BatchFunc
	Tick  TickFunc
	// BatchSize, when above 0, is this projection's batch size instead of
	// the engine's.
	BatchSize int
}

// Sealer is the Merkle log's projection: s seals each batch of events
// into the log (migration 011) and signs checkpoints. The engine runs it
// like the read models, one runner across all processes.
func Sealer(s *ledger.Sealer) Projection {
	return Projection{Name: "log", Batch: s.Seal, Tick: s.Tick}
}

// ReadModels are the ledger's asynchronous read models, which the engine
// in `execledger serve` keeps current: the audit trail, quota usage and
// skill status. The inline ones (requests, runs, processes) are written by
// the SQL API and the executor functions in the transactions that append
// their events; the engine rebuilds and verifies them (Rebuild, Verify).
func ReadModels() []Projection {
	return []Projection{
		{Name: "audit_trail", SQL: true},
		{Name: "quota_usage", SQL: true},
		{Name: "skill_status", SQL: true},
	}
}

var projectionName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Types is the sorted list of event types p consumes.
func (p Projection) Types() []string {
	types := make([]string, 0, len(p.Apply))
	for t := range p.Apply {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}

func (p Projection) validate() error {
	if !projectionName.MatchString(p.Name) {
		return fmt.Errorf("projector: projection name %q must match %s", p.Name, projectionName)
	}
	if p.SQL || p.Batch != nil {
		if len(p.Apply) > 0 || p.SQL && p.Batch != nil {
			return fmt.Errorf("projector: projection %s has more than one of SQL, Batch and Apply", p.Name)
		}
		return nil
	}
	if len(p.Apply) == 0 {
		return fmt.Errorf("projector: projection %s consumes no event type", p.Name)
	}
	for t, f := range p.Apply {
		if f == nil {
			return fmt.Errorf("projector: projection %s: nil apply function for %s", p.Name, t)
		}
	}
	return nil
}
