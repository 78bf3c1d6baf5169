package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/execledger/execledger/internal/config"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// SealerConfig configures a Sealer.
type SealerConfig struct {
	// Signer signs checkpoints with the log's note key; its name is the
	// log's origin. Nil: the tree grows, but no checkpoint is signed.
	Signer note.Signer
	// CheckpointEvery: a checkpoint is signed once this many events wait
	// for one (default 1000) ...
	CheckpointEvery int
	// CheckpointInterval: ... or once the last checkpoint is this old and
	// an event waits (default 1 s).
	CheckpointInterval time.Duration
	// Witnesses are the witness keys whose cosignatures publish a
	// checkpoint; Quorum of them are needed (default all). Without
	// witnesses a checkpoint is published as it is signed.
	Witnesses []note.Verifier
	Quorum    int
	// AuditInterval: how often the sealer looks for events below its
	// cursor that are not leaves (UnsealedEvents), records each new one
	// (ledger.log_faults, a log.unsealed_event) and sets the
	// execledger_log_unsealed_events gauge (default 1 min; the first look
	// is at the first Tick). The look is one anti-join of ledger.events
	// with the leaves. The same look creates the partitions of
	// ledger.events needed next (ledger.events_partition_ahead).
	AuditInterval time.Duration
	// Registerer receives the log's gauges; nil registers none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// withDefaults fills unset fields with the configuration's defaults
// (config.Default).
func (c SealerConfig) withDefaults() SealerConfig {
	d := config.Default().Sealer
	if c.CheckpointEvery <= 0 {
		c.CheckpointEvery = d.CheckpointEvery
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = d.CheckpointInterval.Duration
	}
	if c.Quorum <= 0 || c.Quorum > len(c.Witnesses) {
		c.Quorum = len(c.Witnesses)
	}
	if c.AuditInterval <= 0 {
		c.AuditInterval = d.AuditInterval.Duration
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Sealer appends committed events to the Merkle log and signs checkpoints.
// It is the batch function of the projection "log" (projector.Sealer):
// the projection engine gives it the events after the log's checkpoint in
// delivery order, one batch per transaction, from the one runner that
// holds the log's lock across all processes. A Sealer is used by one
// runner at a time.
type Sealer struct {
	cfg     SealerConfig
	metrics *logMetrics

	// tree is the log as last committed, or nil when unknown: it is read
	// again whenever the stored size differs (a batch rolled back, another
	// process sealed meanwhile).
	tree *compact.Range
	// signed is the newest checkpoint's size, signedAt when it was signed,
	// waiting the events since then that are not checkpoint.signed.
	signed   uint64
	signedAt time.Time
	waiting  int64
	// observed is when Tick last published and refreshed the gauges,
	// audited when it last looked for unsealed events.
	observed, audited time.Time
}

// NewSealer returns a sealer.
func NewSealer(cfg SealerConfig) *Sealer {
	cfg = cfg.withDefaults()
	return &Sealer{cfg: cfg, metrics: newLogMetrics(cfg.Registerer)}
}

// Origin is the log's origin: the note key's name ("" without a key).
func (s *Sealer) Origin() string {
	if s.cfg.Signer == nil {
		return ""
	}
	return s.cfg.Signer.Name()
}

// SealError says which event of a batch the sealer refused, and why.
type SealError struct {
	Index int // in the batch
	Err   error
}

func (e *SealError) Error() string { return e.Err.Error() }
func (e *SealError) Unwrap() error { return e.Err }

// EventIndex is the refused event's index in its batch.
func (e *SealError) EventIndex() int { return e.Index }

// ErrHashMismatch is an event whose stored hash is not the hash of its
// stored bytes: it was changed behind the database's back, and the sealer
// will not seal it.
var ErrHashMismatch = errors.New("ledger: the event's stored hash does not match its bytes")

// Seal appends events, the next ones after from in delivery order, to the
// log in tx, and signs a checkpoint when one is due. Each event's stored
// hash is checked against its bytes first: one that does not match stops
// the log there (a *SealError).
func (s *Sealer) Seal(ctx context.Context, tx pgx.Tx, from Cursor, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	leaves := make([][]byte, len(events))
	waiting := int64(0)
	for i, e := range events {
		enc := e.Encoding()
		if EncodingHash(enc) != e.Hash {
			return &SealError{Index: i, Err: fmt.Errorf("%w: %s version %d at position %d", ErrHashMismatch, e.Stream, e.Version, e.Position)}
		}
		h := LeafHash(enc)
		leaves[i] = h[:]
		if e.Type != "checkpoint.signed" {
			waiting++
		}
	}
	if err := s.load(ctx, tx); err != nil {
		return err
	}
	size := s.tree.End()
	next, err := rangeFactory.NewRange(0, size, append([][]byte(nil), s.tree.Hashes()...))
	if err != nil {
		return fmt.Errorf("ledger: seal: %w", err)
	}
	n := len(events) * 2
	levels, idx, hashes := make([]int16, 0, n), make([]int64, 0, n), make([][]byte, 0, n)
	visit := func(id compact.NodeID, h []byte) {
		levels, idx, hashes = append(levels, int16(id.Level)), append(idx, int64(id.Index)), append(hashes, h)
	}
	for _, h := range leaves {
		if err := next.Append(h, visit); err != nil {
			return fmt.Errorf("ledger: seal: %w", err)
		}
	}
	last := events[len(events)-1]
	var newSize int64
	err = tx.QueryRow(ctx, queryLogAppend, strconv.FormatUint(from.TxID, 10), from.Position,
		strconv.FormatUint(last.TxID, 10), last.Position, int64(size), levels, idx, hashes).Scan(&newSize)
	if err != nil {
		s.tree = nil
		return fmt.Errorf("ledger: seal after position %d: %w", from.Position, err)
	}
	s.tree = next
	s.waiting += waiting
	s.metrics.setIntegrated(next.End())
	if s.due() {
		return s.sign(ctx, tx)
	}
	return nil
}

// Tick is called between batches, outside any transaction: it signs a
// checkpoint that has come due by time, publishes checkpoints whose
// witnesses have cosigned them, and refreshes the gauges (the last two at
// most once a second).
func (s *Sealer) Tick(ctx context.Context, conn *pgx.Conn) error {
	if s.cfg.Signer != nil && (s.tree == nil || s.due()) {
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := s.load(ctx, tx); err != nil {
				return err
			}
			if !s.due() {
				return nil
			}
			return s.sign(ctx, tx)
		}); err != nil {
			s.tree = nil
			return err
		}
	}
	if time.Since(s.audited) >= s.cfg.AuditInterval {
		if err := s.audit(ctx, conn); err != nil {
			return err
		}
	}
	if time.Since(s.observed) < time.Second {
		return nil
	}
	s.observed = time.Now()
	if len(s.cfg.Witnesses) > 0 {
		if err := s.publish(ctx, conn); err != nil {
			return err
		}
	}
	s.observe(ctx, conn)
	return nil
}

// audit looks for events the log has passed without sealing them and
// records the new ones; each is a forgery (see UnsealedEvents), reported
// at error level and by the gauge until it is gone.
func (s *Sealer) audit(ctx context.Context, conn *pgx.Conn) error {
	var recorded, present int64
	if err := conn.QueryRow(ctx, queryLogRecordFaults).Scan(&recorded, &present); err != nil {
		return fmt.Errorf("ledger: look for unsealed events: %w", err)
	}
	s.audited = time.Now()
	var made int
	if err := conn.QueryRow(ctx, queryPartitionAhead).Scan(&made); err != nil {
		return fmt.Errorf("ledger: create the partitions of ledger.events ahead: %w", err)
	}
	if made > 0 {
		s.cfg.Logger.Info("created partitions of ledger.events ahead of need", slog.Int("partitions", made))
	}
	s.metrics.setUnsealed(present)
	if present > 0 {
		s.cfg.Logger.Error("events below the sealed horizon are not in the Merkle log: ledger.events was written behind the sealer (see ledger.log_faults)",
			slog.Int64("present", present), slog.Int64("recorded_now", recorded))
	}
	return nil
}

// load reads the tree and the signing state when they are unknown or stale.
func (s *Sealer) load(ctx context.Context, db DBTX) error {
	size, err := LogSize(ctx, db)
	if err != nil {
		return err
	}
	if s.tree != nil && s.tree.End() == size {
		return nil
	}
	if s.tree, err = TreeRange(ctx, db, size); err != nil {
		return fmt.Errorf("ledger: load the log at size %d: %w", size, err)
	}
	s.signed, s.signedAt = 0, time.Time{}
	c, err := NewestCheckpoint(ctx, db, false)
	switch {
	case errors.Is(err, ErrNoCheckpoint):
	case err != nil:
		return err
	default:
		s.signed, s.signedAt = c.Size, c.SignedAt
		s.metrics.setSigned(c.Size, c.SignedAt)
	}
	if err := s.loadWitnessed(ctx, db); err != nil {
		return err
	}
	if err := db.QueryRow(ctx, queryUnsignedEvents, int64(s.signed)).Scan(&s.waiting); err != nil {
		return fmt.Errorf("ledger: count unsigned events: %w", err)
	}
	s.metrics.setIntegrated(size)
	return nil
}

// loadWitnessed sets the witnessed gauges from the newest published
// checkpoint, so that a restarted sealer does not report the log as never
// witnessed until the next publication.
func (s *Sealer) loadWitnessed(ctx context.Context, db DBTX) error {
	if s.metrics == nil {
		return nil
	}
	c, err := NewestCheckpoint(ctx, db, true)
	switch {
	case errors.Is(err, ErrNoCheckpoint):
		return nil
	case err != nil:
		return err
	}
	s.metrics.setWitnessed(c.Size, c.SignedAt)
	return nil
}

// due reports whether a checkpoint should be signed now.
func (s *Sealer) due() bool {
	return s.cfg.Signer != nil && s.waiting > 0 && s.tree.End() > s.signed &&
		(s.waiting >= int64(s.cfg.CheckpointEvery) || time.Since(s.signedAt) >= s.cfg.CheckpointInterval)
}

// sign signs the current tree and records the checkpoint in tx.
func (s *Sealer) sign(ctx context.Context, tx pgx.Tx) error {
	size := s.tree.End()
	root, err := s.tree.GetRootHash(nil)
	if err != nil {
		return fmt.Errorf("ledger: sign checkpoint: %w", err)
	}
	body := log.Checkpoint{Origin: s.cfg.Signer.Name(), Size: size, Hash: root}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(body)}, s.cfg.Signer)
	if err != nil {
		return fmt.Errorf("ledger: sign checkpoint %d: %w", size, err)
	}
	var version int64
	if err := tx.QueryRow(ctx, queryLogCheckpoint, int64(size), root, string(signed), len(s.cfg.Witnesses) == 0).Scan(&version); err != nil {
		return fmt.Errorf("ledger: record checkpoint %d: %w", size, err)
	}
	s.signed, s.signedAt, s.waiting = size, time.Now(), 0
	s.metrics.setSigned(size, s.signedAt)
	if len(s.cfg.Witnesses) == 0 {
		s.metrics.setWitnessed(size, s.signedAt)
	}
	return nil
}

// publish marks the unpublished checkpoints that Quorum witnesses have
// cosigned as published.
func (s *Sealer) publish(ctx context.Context, conn *pgx.Conn) error {
	cs, err := readCheckpoints(ctx, conn, queryUnpublished)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if CountCosignatures(c, s.cfg.Witnesses) < s.cfg.Quorum {
			continue
		}
		if _, err := conn.Exec(ctx, queryLogPublish, int64(c.Size)); err != nil {
			return fmt.Errorf("ledger: publish checkpoint %d: %w", c.Size, err)
		}
		s.metrics.setWitnessed(c.Size, c.SignedAt)
		s.cfg.Logger.Info("checkpoint published", slog.Uint64("size", c.Size))
		break // the newest cosigned one; older ones stay unpublished
	}
	return nil
}

// CountCosignatures counts the witnesses among ws whose cosignature of c
// verifies.
func CountCosignatures(c Checkpoint, ws []note.Verifier) int {
	if len(c.Cosignatures) == 0 || len(ws) == 0 {
		return 0
	}
	var only Checkpoint
	only.Note = append(append([]byte(nil), c.Body()...), '\n')
	only.Cosignatures = c.Cosignatures
	n, err := note.Open(only.FullNote(), note.VerifierList(ws...))
	if err != nil {
		return 0
	}
	seen := map[uint32]bool{}
	for _, sig := range n.Sigs {
		seen[sig.Hash] = true
	}
	return len(seen)
}

// observe refreshes the sequenced size and the lag.
func (s *Sealer) observe(ctx context.Context, db DBTX) {
	if s.metrics == nil {
		return
	}
	var behind int64
	var lag float64
	if err := db.QueryRow(ctx, queryLogBehind).Scan(&behind, &lag); err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("log gauges not refreshed", slog.Any("error", err))
		}
		return
	}
	s.metrics.setBehind(behind, lag)
}
