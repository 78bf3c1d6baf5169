package executor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// recorder is what every writing service of the executor shares: it signs
// attestations and records events and state changes through
// ledger.executor_record, in transactions of one shape (settle).
type recorder struct {
	pool            *pgxpool.Pool
	store           *ledger.Store
	signer          *attest.Signer
	policy          *policyRef // the policy in force, for attestations of outcomes no decision of this executor led to
	label           string     // the executor's Config.Label
	approvalTimeout time.Duration
	logger          *slog.Logger
	head            logHead // the newest checkpoint, for attestations
}

// settle runs one writing transaction of the shape the claimer, the
// completer and the rescuer share: lock and read rows with query, let
// decide say what becomes of them (events, state changes and attestations,
// through w; decide may also use tx), record it all with one call of
// ledger.executor_record, and commit. It returns the rows read; with none
// it commits nothing.
func settle[T any](ctx context.Context, r *recorder, query string, args []any, scan pgx.RowToFunc[T],
	decide func(ctx context.Context, tx pgx.Tx, rows []T, w *writes) error) ([]T, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, scan)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	var w writes
	if err := decide(ctx, tx, list, &w); err != nil {
		return nil, err
	}
	if err := w.exec(ctx, tx, r.store, r.approvalTimeout); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return list, nil
}

// meta is the metadata of an event the executor writes about request id
// in span sc.
func (r *recorder) meta(id uuid.UUID, sc trace.SpanContext) ledger.Metadata {
	return traceMeta(ledger.Metadata{Actor: r.label, CorrelationID: id.String()}, sc)
}

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
func (w *writes) finish(id, claim uuid.UUID, state ledger.State, res Result, tier string) {
	w.transition(id, claim, transFinish, false)
	i := w.index[id]
	st := string(state)
	w.states[i], w.errorKinds[i], w.errors[i], w.tiers[i] = &st, strp(string(res.ErrorKind)), strp(res.Error), strp(tier)
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
