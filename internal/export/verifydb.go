package export

import (
	"context"
	"fmt"
	"time"

	"github.com/execledger/execledger/internal/contract"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// DefaultPendingAfter is how long after a request ended VerifyDB lets its
// attestation be missing: requests ended in SQL are attested by an
// executor a few seconds later.
const DefaultPendingAfter = attestWithin

// pendingListed is how many pending requests a report names.
const pendingListed = 20

// RebuildsSkippedReadOnly is why VerifyDB compares no read model table
// with its rebuild on a read-only session (a hot standby).
const RebuildsSkippedReadOnly = "read-only session (a hot standby): rebuilding a read model needs scratch tables; run `execledger projector verify` against the primary to compare the tables"

// RebuildsSkippedArchived is why VerifyDB compares no read model table
// with its rebuild once part of the log is archived (execledger archive):
// a rebuild reads the log from its first event.
const RebuildsSkippedArchived = "leaves %d to %d of the log are archived (ledger.event_archives): a rebuild reads the log from its first event; " +
	"the archived leaves were checked against the tree, and the requests read model against the attestations still in the database"

// VerifyOptions configure VerifyDB.
type VerifyOptions struct {
	// Wait is how long to wait for a clean checkpoint when the newest is
	// not (see Options.Wait); after it the newest is verified anyway.
	Wait time.Duration
	// PendingAfter: a final request whose attestation is not in the log
	// is pending, not a fault, this long after it ended (0: 60 s).
	PendingAfter time.Duration
	// Progress, if set, is called with the events verified and the
	// leaves to verify.
	Progress func(done, total int64)
}

// DBReport is VerifyDB's verdict: the bundle verifier's on the whole log,
// then the read model's check.
type DBReport struct {
	bundle.Report
	// Published says whether the checkpoint verified against (NewestSize)
	// is published; Unclean why a newer one was not taken.
	Published bool      `json:"checkpoint_published"`
	Unclean   *Unclean  `json:"newer_unclean,omitempty"`
	ReadModel ReadModel `json:"read_model"`
}

// ReadModel is what the check of the read models against the log found.
type ReadModel struct {
	Checked bool  `json:"checked"` // false when the log's verification failed first
	Final   int64 `json:"final"`   // final requests in ledger.requests
	// Compared is how many requests were compared field by field with
	// their sealed attestation; Tables the read model tables compared
	// with their rebuild from the log.
	Compared int64    `json:"compared"`
	Tables   []string `json:"tables,omitempty"`
	// RebuildsSkipped says why no table was compared with its rebuild:
	// the session is read-only (a hot standby, or a replica URL's
	// read-only session), and a rebuild needs scratch tables. The other
	// checks ran; `execledger projector verify` on the primary compares
	// the tables.
	RebuildsSkipped string `json:"rebuilds_skipped,omitempty"`
	// Pending are final requests whose attestation is not (yet) sealed
	// under the checkpoint: ended within PendingAfter, or attested but not
	// sealed yet. The first few are named.
	Pending         int64    `json:"pending"`
	PendingRequests []string `json:"pending_requests,omitempty"`
}

// VerifyDB verifies the live log as an export of it would be verified:
// every leaf from 0 against the newest clean checkpoint (published or
// not; the newest when none is clean after opts.Wait), record by record
// through bundle.VerifyRecords, with no file. When the log verifies:
//   - no row of ledger.events may be below the sealed horizon without
//     being a leaf (UnsealedEvent);
//   - every final row of ledger.requests must name, as attestation_digest,
//     the attestation its stream holds under the checkpoint
//     (MissingAttestation, naming the request, when not);
//   - every request with a sealed attestation must have the state, error
//     kind, tier and output that attestation signs (ReadModelDiffers);
//   - every SQL read model must equal its rebuild from the log
//     (ReadModelDiffers, naming the table and its first differing row),
//     unless the session is read-only (a hot standby), which cannot hold
//     the scratch tables of a rebuild: ReadModel.RebuildsSkipped says so.
//
// db must allow concurrent queries (a pool).
func VerifyDB(ctx context.Context, db projector.Verifier, keys bundle.Keys, opts VerifyOptions) (DBReport, error) {
	var rep DBReport
	wait := Options{Wait: opts.Wait}.wait()
	ch, err := (&chooser{db: db, wait: wait, anyway: true}).choose(ctx)
	if err != nil {
		return rep, err
	}
	cp := ch.Checkpoint
	rep.Published, rep.Unclean = cp.PublishedAt != nil, ch.Unclean
	if ch.Newest == cp.Size {
		rep.Unclean = nil
	}
	p := &plan{newest: cp, full: true, header: bundle.Header{
		Format: bundle.FormatName, Version: bundle.FormatVersion,
		Origin: cp.Origin, CreatedAt: time.Now().UTC(), Scope: bundle.Scope{Full: true},
		Keys: bundle.KeyIDs{Log: logFingerprint(cp), Witnesses: witnessFingerprints(cp)},
	}}
	archived, err := archivedRanges(ctx, db)
	if err != nil {
		return rep, err
	}
	f := startFeed(ctx, func(ctx context.Context, emit func(bundle.Record) error) error {
		return p.produce(ctx, db, emit)
	})
	var progress func(int64)
	if opts.Progress != nil {
		total := p.total()
		progress = func(done int64) { opts.Progress(done, total) }
	}
	rep.Report, err = bundle.VerifyLive(ctx, f.next, keys, archived, progress)
	f.close()
	if err != nil || !rep.OK {
		return rep, err
	}
	after := opts.PendingAfter
	if after <= 0 {
		after = DefaultPendingAfter
	}
	for _, check := range []func() (*bundle.Fault, error){
		func() (*bundle.Fault, error) { return checkUnsealed(ctx, db) },
		func() (*bundle.Fault, error) { return checkReadModel(ctx, db, cp.Size, after, &rep) },
		func() (f *bundle.Fault, err error) {
			f, rep.ReadModel.Compared, err = checkAttested(ctx, db, cp.Size)
			return f, err
		},
		func() (f *bundle.Fault, err error) {
			var readOnly bool
			if err := db.QueryRow(ctx, "SELECT current_setting('transaction_read_only')::boolean").Scan(&readOnly); err != nil {
				return nil, fmt.Errorf("export: read models: %w", err)
			}
			if readOnly {
				rep.ReadModel.RebuildsSkipped = RebuildsSkippedReadOnly
				return nil, nil
			}
			if len(archived) > 0 {
				rep.ReadModel.RebuildsSkipped = fmt.Sprintf(RebuildsSkippedArchived, archived[0].Begin, archived[len(archived)-1].End-1)
				return nil, nil
			}
			f, rep.ReadModel.Tables, err = checkRebuilds(ctx, db)
			return f, err
		},
	} {
		f, err := check()
		if err != nil {
			return rep, err
		}
		if f != nil {
			rep.OK, rep.Fault = false, f
			return rep, nil
		}
	}
	rep.ReadModel.Checked = true
	return rep, nil
}

// checkReadModel checks that the final rows of ledger.requests name the
// attestations the log sealed below size, and counts those pending.
func checkReadModel(ctx context.Context, db ledger.DBTX, size uint64, after time.Duration, rep *DBReport) (*bundle.Fault, error) {
	if err := db.QueryRow(ctx, queryFinalRequests).Scan(&rep.ReadModel.Final); err != nil {
		return nil, fmt.Errorf("export: read model: %w", err)
	}
	rows, err := db.Query(ctx, queryReadModelFaults, int64(size), after.Seconds())
	if err != nil {
		return nil, fmt.Errorf("export: read model: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r readModelRow
		if err := rows.Scan(&r.id, &r.state, &r.digest, &r.finishedAt, &r.recent, &r.logDigest, &r.leaf); err != nil {
			return nil, fmt.Errorf("export: read model: %w", err)
		}
		if f := r.fault(size); f != nil {
			return f, nil
		}
		if rep.ReadModel.Pending++; len(rep.ReadModel.PendingRequests) < pendingListed {
			rep.ReadModel.PendingRequests = append(rep.ReadModel.PendingRequests, r.id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export: read model: %w", err)
	}
	return nil, nil
}

// readModelRow is a final request whose attestation is not the one the
// log sealed under the checkpoint.
type readModelRow struct {
	id, state  string
	digest     *string // ledger.requests.attestation_digest
	finishedAt *time.Time
	recent     bool
	logDigest  *string // the stream's attestation.signed's attestation_digest
	leaf       *int64  // its leaf
}

// fault is the row's fault; nil when it is pending: ended recently, or
// attested but not sealed under the checkpoint yet.
func (r readModelRow) fault(size uint64) *bundle.Fault {
	sealed := r.leaf != nil && uint64(*r.leaf) < size
	switch {
	case r.logDigest == nil && r.recent, r.logDigest != nil && !sealed:
		return nil
	case r.logDigest == nil:
		ended := "at an unknown time"
		if r.finishedAt != nil {
			ended = "at " + r.finishedAt.UTC().Format(time.RFC3339)
		}
		return &bundle.Fault{Code: bundle.MissingAttestation, Stream: contract.RequestStream(r.id),
			Message: fmt.Sprintf("ledger.requests says request %s ended (%s) %s, and its stream holds no attestation", r.id, r.state, ended)}
	}
	leaf := uint64(*r.leaf)
	said := "none"
	if r.digest != nil {
		said = *r.digest
	}
	return &bundle.Fault{Code: bundle.MissingAttestation, Stream: contract.RequestStream(r.id), Leaf: &leaf,
		Message: fmt.Sprintf("ledger.requests says request %s (%s) has attestation %s; the attestation the log sealed at leaf %d is %s",
			r.id, r.state, said, leaf, *r.logDigest)}
}
