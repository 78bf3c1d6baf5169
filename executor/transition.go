package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Kinds of ledger.executor_transition.
const (
	transStart         = "start"
	transAwaitApproval = "await_approval"
	transRequeue       = "requeue"
	transFinish        = "finish"
	transAttest        = "attest"
)

// writes collects what one transaction records about its requests: the
// events (through ledger.executor_append, under the claims it names) and
// the state changes that follow from them (ledger.executor_transition).
// A request that finishes or is attested must have its attestation.signed
// as its last event in the batch.
type writes struct {
	claims  []ledger.Claim
	appends []ledger.StreamAppend

	ids, claimIDs                              []uuid.UUID
	kinds                                      []string
	charges                                    []bool
	states, errorKinds, errors, outputs, tiers []*string
	finished                                   int // how many finish
}

// events adds events about request id under claim.
func (w *writes) events(id, claim uuid.UUID, sa ledger.StreamAppend) {
	w.claims = append(w.claims, ledger.Claim{Request: id, ID: claim})
	w.appends = append(w.appends, sa)
}

// other adds events for another stream (channel:<name>) on behalf of a
// request whose claim events() has named.
func (w *writes) other(sa ledger.StreamAppend) { w.appends = append(w.appends, sa) }

func (w *writes) transition(id, claim uuid.UUID, kind string, charge bool) {
	w.ids, w.claimIDs = append(w.ids, id), append(w.claimIDs, claim)
	w.kinds, w.charges = append(w.kinds, kind), append(w.charges, charge)
	w.states, w.errorKinds, w.errors = append(w.states, nil), append(w.errorKinds, nil), append(w.errors, nil)
	w.outputs, w.tiers = append(w.outputs, nil), append(w.tiers, nil)
}

// finish ends request id in state with res's outcome.
func (w *writes) finish(id, claim uuid.UUID, state string, res Result, tier string) {
	w.transition(id, claim, transFinish, false)
	i := len(w.ids) - 1
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

// exec writes the events, then the state changes, in tx.
func (w *writes) exec(ctx context.Context, tx pgx.Tx, store *ledger.Store, approvalTimeout time.Duration) error {
	if _, err := store.AppendClaimed(ctx, tx, w.claims, w.appends); err != nil {
		return err
	}
	if len(w.ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, queryTransition, w.ids, w.claimIDs, w.kinds, w.charges, w.states, w.errorKinds,
		w.errors, w.outputs, w.tiers, approvalTimeout.String()); err != nil {
		return fmt.Errorf("record state: %w", err)
	}
	return nil
}
