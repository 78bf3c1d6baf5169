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

// Projection is a read model's definition: its name (the row in
// ledger.projections, and stream projection:<name> for its own events) and
// one apply function per event type it consumes. Events of other types
// only move its checkpoint.
type Projection struct {
	Name  string
	Apply map[string]ApplyFunc
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
