package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
)

// Options configure an export.
type Options struct {
	// Scope is what the bundle holds: Full, or the requests selected by
	// Request, or by Principal and submitted_at in [Since, Until). A
	// partial bundle holds whole request streams, from version 1.
	Scope bundle.Scope
	// Wait is how long to wait for a clean published checkpoint (and,
	// with Request, for one that holds the request's events) when the
	// newest is not: 0 is DefaultWait, negative does not wait.
	Wait time.Duration
	// Progress, if set, is called with the events written and the events
	// to write, every chunk.
	Progress func(done, total int64)
	// Now stamps the header (default time.Now).
	Now func() time.Time
}

// Summary is what an export wrote.
type Summary struct {
	Scope       bundle.Scope
	Choice      Choice // the checkpoint the bundle is proved against, and why
	Events      int64
	Requests    int64 // request streams written (whose first event is in the bundle)
	Checkpoints int64
	Ranges      int64
	// Selected is how many requests a partial scope selected; Unsealed
	// how many of their events are not under the checkpoint yet (and not
	// in the bundle).
	Selected int64
	Unsealed int64
	// Forged are events of ledger.events the log has passed without
	// sealing them (ledger.UnsealedEvents; the first few): the bundle,
	// which holds the sealed record, leaves them out, and says so here.
	Forged []ledger.UnsealedEvent
}

// forgedListed is how many unsealed events a Summary names.
const forgedListed = 20

func (o Options) wait() time.Duration {
	switch {
	case o.Wait == 0:
		return DefaultWait
	case o.Wait < 0:
		return 0
	}
	return o.Wait
}

// Export writes a bundle of the log to w, proved against the newest clean
// published checkpoint, and ends it. Every event's leaf hash is the one
// the log stores; payload and metadata are the stored text. It returns
// ErrNoRequest when Scope.Request does not exist, ErrNoCheckpoint when
// there is nothing to prove against, ErrNoCleanCheckpoint when no
// checkpoint is clean.
func Export(ctx context.Context, db ledger.DBTX, opts Options, w *bundle.Writer) (Summary, error) {
	sum := Summary{Scope: opts.Scope}
	if err := validScope(opts.Scope); err != nil {
		return sum, err
	}
	c := &chooser{db: db, published: true, wait: opts.wait()}
	if id := opts.Scope.Request; id != "" {
		if err := checkRequest(ctx, db, id); err != nil {
			return sum, err
		}
		c.atLeast = requestSealed(db, id)
	}
	var err error
	if sum.Choice, err = c.choose(ctx); err != nil {
		return sum, err
	}
	p, err := newPlan(ctx, db, opts, sum.Choice.Checkpoint, &sum)
	if err != nil {
		return sum, err
	}
	if opts.Progress != nil {
		total := p.total()
		p.progress = func(done int64) { opts.Progress(done, total) }
	}
	if err := writeAll(ctx, db, p, w); err != nil {
		return sum, err
	}
	sum.Events, sum.Requests, sum.Checkpoints, sum.Ranges = p.events, p.requests, p.written, p.ranges
	if sum.Forged, err = ledger.UnsealedEvents(ctx, db, forgedListed); err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	return sum, nil
}

// newPlan plans the bundle of opts.Scope against checkpoint cp.
func newPlan(ctx context.Context, db ledger.DBTX, opts Options, cp ledger.Checkpoint, sum *Summary) (*plan, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	p := &plan{newest: cp, full: opts.Scope.Full, header: bundle.Header{
		Origin: cp.Origin, CreatedAt: now().UTC(), Scope: opts.Scope,
		Keys: bundle.KeyIDs{Log: logFingerprint(cp), Witnesses: witnessFingerprints(cp)},
	}}
	if p.full {
		ids, err := attestationKeys(ctx, db, cp.Size)
		if err != nil {
			return nil, err
		}
		p.header.Keys.Attestation = ids
		return p, nil
	}
	sel, err := selectLeaves(ctx, db, opts.Scope, cp.Size)
	if err != nil {
		return nil, err
	}
	sum.Selected, sum.Unsealed = sel.requests, sel.unsealed
	if opts.Scope.Request != "" && len(sel.leaves) == 0 {
		return nil, fmt.Errorf("export: request %s: %w (checkpoint %d); try again in a few seconds", opts.Scope.Request, ErrNotSealed, cp.Size)
	}
	p.leaves, p.checkpoints, p.header.Keys.Attestation = sel.leaves, sel.checkpoints, sel.keyIDs
	return p, nil
}

// writeAll writes p's records to w as a producer reads them.
func writeAll(ctx context.Context, db ledger.DBTX, p *plan, w *bundle.Writer) error {
	f := startFeed(ctx, func(ctx context.Context, emit func(bundle.Record) error) error {
		return p.produce(ctx, db, emit)
	})
	defer f.close()
	for {
		r, err := f.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := write(w, r); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
}

func write(w *bundle.Writer, r bundle.Record) error {
	switch r := r.(type) {
	case *bundle.Header:
		return w.Header(*r)
	case *bundle.Checkpoint:
		return w.Checkpoint(*r)
	case *bundle.Consistency:
		return w.Consistency(*r)
	case *bundle.Range:
		return w.Range(*r)
	case *bundle.Event:
		return w.Event(*r)
	case *bundle.End:
		return w.End()
	}
	return fmt.Errorf("%T is not a bundle record", r)
}

// validScope refuses a full scope with a filter, a partial one without,
// and a request with other filters.
func validScope(s bundle.Scope) error {
	filtered := s.Request != "" || s.Principal != "" || s.Since != nil || s.Until != nil
	switch {
	case s.Run != "" && s.Principal == "":
		return errors.New("export: a run scope needs its principal: run ids are per principal")
	case s.Full && filtered:
		return errors.New("export: a full scope takes no request, principal or time filter")
	case !s.Full && !filtered:
		return errors.New("export: a partial scope needs a request, a principal or a time range")
	case s.Request != "" && (s.Principal != "" || s.Run != "" || s.Since != nil || s.Until != nil):
		return errors.New("export: a request scope takes no other filter")
	case s.Since != nil && s.Until != nil && !s.Since.Before(*s.Until):
		return fmt.Errorf("export: since %s is not before until %s", s.Since.Format(time.RFC3339), s.Until.Format(time.RFC3339))
	}
	return nil
}

// attestationKeys lists the key ids of the attestations sealed below size.
func attestationKeys(ctx context.Context, db ledger.DBTX, size uint64) ([]string, error) {
	rows, err := db.Query(ctx, queryAttestationKeys, int64(size))
	if err != nil {
		return nil, fmt.Errorf("export: attestation keys: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("export: attestation keys: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export: attestation keys: %w", err)
	}
	return ids, nil
}
