package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Kinds of state change ledger.executor_record makes.
const (
	transStart         = "start"
	transAwaitApproval = "await_approval"
	transRequeue       = "requeue"
	transFinish        = "finish"
	transAttest        = "attest"
)

// writes collects what one transaction records about its requests, for
// one call of ledger.executor_record: per request the claim it acts under
// and the state change that follows, and the events. A request that
// finishes or is attested must have its attestation.signed as its last
// event.
type writes struct {
	index   map[uuid.UUID]int
	appends []ledger.StreamAppend

	ids, claims                                []uuid.UUID
	kinds, states, errorKinds, errors, outputs []*string
	tiers                                      []*string
	charges                                    []bool
	finished                                   int // how many finish
}

// request returns id's index, adding it under claim.
func (w *writes) request(id, claim uuid.UUID) int {
	if i, ok := w.index[id]; ok {
		return i
	}
	if w.index == nil {
		w.index = map[uuid.UUID]int{}
	}
	w.index[id] = len(w.ids)
	w.ids, w.claims = append(w.ids, id), append(w.claims, claim)
	w.kinds, w.states, w.errorKinds = append(w.kinds, nil), append(w.states, nil), append(w.errorKinds, nil)
	w.errors, w.outputs, w.tiers = append(w.errors, nil), append(w.outputs, nil), append(w.tiers, nil)
	w.charges = append(w.charges, false)
	return len(w.ids) - 1
}

// events adds events about request id under claim.
func (w *writes) events(id, claim uuid.UUID, sa ledger.StreamAppend) {
	w.request(id, claim)
	w.appends = append(w.appends, sa)
}

// other adds events for another stream (channel:<name>) on behalf of a
// request that events() has named.
func (w *writes) other(sa ledger.StreamAppend) { w.appends = append(w.appends, sa) }

func (w *writes) transition(id, claim uuid.UUID, kind string, charge bool) {
	i := w.request(id, claim)
	w.kinds[i], w.charges[i] = &kind, charge
}

// finish ends request id in state with res's outcome.
func (w *writes) finish(id, claim uuid.UUID, state string, res Result, tier string) {
	w.transition(id, claim, transFinish, false)
	i := w.index[id]
	w.states[i], w.errorKinds[i], w.errors[i], w.tiers[i] = &state, strp(res.ErrorKind), strp(res.Error), strp(tier)
	if len(res.Output) > 0 {
		s := string(res.Output)
		w.outputs[i] = &s
	}
	w.finished++
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// exec writes it all in tx.
func (w *writes) exec(ctx context.Context, tx pgx.Tx, store *ledger.Store, approvalTimeout time.Duration) error {
	if len(w.ids) == 0 {
		return nil
	}
	_, err := store.Record(ctx, tx, ledger.Record{
		Requests: w.ids, Claims: w.claims, Events: w.appends, Kinds: w.kinds, Charges: w.charges, States: w.states,
		ErrorKinds: w.errorKinds, Errors: w.errors, Outputs: w.outputs, Tiers: w.tiers, ApprovalTimeout: approvalTimeout,
	})
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
