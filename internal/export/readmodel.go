package export

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/execledger/execledger/internal/contract"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// readModelBatch is how many requests checkAttested reads at once.
const readModelBatch = 1000

// checkUnsealed is the fault of the first event of ledger.events that the
// log has passed without sealing it (ledger.UnsealedEvents), or nil.
func checkUnsealed(ctx context.Context, db ledger.DBTX) (*bundle.Fault, error) {
	found, err := ledger.UnsealedEvents(ctx, db, 1)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	u := found[0]
	why := "below the sealer's cursor and no leaf of the Merkle log"
	if u.Reason == ledger.ReasonFutureTransaction {
		why = "claims a transaction id no transaction has had yet"
	}
	return &bundle.Fault{Code: bundle.UnsealedEvent, Stream: u.Stream, Version: u.Version,
		Message: fmt.Sprintf("ledger.events holds %s at position %d, transaction %d, that is %s: written behind the sealer, it is not part of the record",
			u.Type, u.Position, u.TxID, why)}, nil
}

// attestedRow is a request of the read model beside the attestation the
// log sealed for it under the checkpoint, and whether its output is the
// output of the sealed execution.finished (or absent with none).
type attestedRow struct {
	id, state               string
	errorKind, tier, digest *string
	envelope, sealedDigest  string
	outputSame              bool
}

// checkAttested compares every request of ledger.requests whose
// attestation the log sealed below size with that attestation's signed
// statement: its state, error kind and tier with the predicate's, its
// output with the sealed execution.finished output (whose bytes the
// verified log ties to the statement's output subject). It returns the
// first difference as a ReadModelDiffers fault, and how many requests it
// compared. A row whose attestation_digest is another than the sealed
// one is checkReadModel's.
func checkAttested(ctx context.Context, db ledger.DBTX, size uint64) (*bundle.Fault, int64, error) {
	var compared int64
	after := "00000000-0000-0000-0000-000000000000"
	for {
		rows, err := db.Query(ctx, queryAttestedRequests, int64(size), after, readModelBatch)
		if err != nil {
			return nil, compared, fmt.Errorf("export: read model: %w", err)
		}
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (attestedRow, error) {
			var r attestedRow
			err := row.Scan(&r.id, &r.state, &r.errorKind, &r.tier, &r.digest, &r.envelope, &r.sealedDigest, &r.outputSame)
			return r, err
		})
		if err != nil {
			return nil, compared, fmt.Errorf("export: read model: %w", err)
		}
		for _, r := range batch {
			if r.digest == nil || *r.digest != r.sealedDigest {
				continue
			}
			compared++
			if f := r.differs(); f != nil {
				return f, compared, nil
			}
		}
		if len(batch) < readModelBatch {
			return nil, compared, nil
		}
		after = batch[len(batch)-1].id
	}
}

// differs is the row's fault against its sealed statement, or nil.
func (r attestedRow) differs() *bundle.Fault {
	st, err := sealedStatement(r.envelope)
	if err != nil {
		return r.fault("its sealed attestation cannot be read: %v", err)
	}
	p := st.Predicate
	if want := stateOf(p); r.state != want {
		return r.fault("ledger.requests says state %s; its sealed attestation says %s (decision %s, success %t, error kind %q)",
			r.state, want, p.Decision, p.Success, p.ErrorKind)
	}
	if got := deref(r.errorKind); got != p.ErrorKind {
		return r.fault("ledger.requests says error kind %q; its sealed attestation says %q", got, p.ErrorKind)
	}
	if got := deref(r.tier); got != p.Tier {
		return r.fault("ledger.requests says tier %q; its sealed attestation says %q", got, p.Tier)
	}
	if !r.outputSame {
		return r.fault("ledger.requests holds another output than the sealed execution.finished, whose digest the attestation signs (%s)",
			outputSubject(st))
	}
	return nil
}

func (r attestedRow) fault(format string, args ...any) *bundle.Fault {
	return &bundle.Fault{Code: bundle.ReadModelDiffers, Stream: contract.RequestStream(r.id),
		Message: fmt.Sprintf("request %s: ", r.id) + fmt.Sprintf(format, args...)}
}

// stateOf is the request state an execution statement signs: a success,
// a cancellation (while pending, approved or running), a denial (policy,
// approval), else a failure.
func stateOf(p attest.Execution) string {
	switch {
	case p.Success:
		return string(ledger.StateSucceeded)
	case p.ErrorKind == string(ledger.KindCancelled):
		return string(ledger.StateCancelled)
	case p.Decision == attest.DecisionDeny:
		return string(ledger.StateDenied)
	}
	return string(ledger.StateFailed)
}

// sealedStatement decodes the statement of an attestation envelope whose
// signature the log's verification has checked already.
func sealedStatement(envelope string) (*attest.Statement, error) {
	var env attest.Envelope
	if err := json.Unmarshal([]byte(envelope), &env); err != nil {
		return nil, err
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil, err
	}
	var st attest.Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func outputSubject(st *attest.Statement) string {
	for _, s := range st.Subject {
		if s.Name == attest.SubjectOutput {
			return "sha256:" + s.Digest["sha256"]
		}
	}
	return "none"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkRebuilds compares every SQL read model with its rebuild from the
// log (projector.Verify, what `execledger projector verify` runs): the
// first table that differs is a ReadModelDiffers fault. It returns the
// tables compared.
func checkRebuilds(ctx context.Context, db projector.Verifier) (*bundle.Fault, []string, error) {
	rows, err := db.Query(ctx, queryRebuildable)
	if err != nil {
		return nil, nil, fmt.Errorf("export: read models: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, fmt.Errorf("export: read models: %w", err)
	}
	checks, err := projector.Verify(ctx, db, names...)
	if err != nil {
		return nil, nil, fmt.Errorf("export: read models: %w", err)
	}
	var tables []string
	for _, c := range checks {
		tables = append(tables, c.Table)
		if !c.OK() {
			return &bundle.Fault{Code: bundle.ReadModelDiffers,
				Message: fmt.Sprintf("read model %s (projection %s) differs from its rebuild from the log: %d rows live, %d rebuilt; first difference: %s",
					c.Table, c.Projection, c.LiveRows, c.RebuiltRows, c.FirstDifference)}, tables, nil
		}
	}
	return nil, tables, nil
}
