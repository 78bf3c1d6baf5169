package export

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/execledger/execledger/internal/retry"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Defaults of the checkpoint choice.
const (
	DefaultWait = 30 * time.Second
	// cleanWindow is how many leaves before a checkpoint are looked at for
	// a final outcome without its attestation. SQL-ended requests are
	// attested within seconds, a few thousand leaves at full load; an
	// outcome older than this is not looked for (the verifier still finds
	// it).
	cleanWindow = 20000
	pollEvery   = 200 * time.Millisecond
	// olderTried is how many checkpoints before the newest are tried when
	// no clean one came during the wait.
	olderTried = 64
	// attestWithin is how long after a request ended in SQL an executor
	// may take to attest it: an outcome older than that without an
	// attestation is not waited for, and VerifyDB reports it.
	attestWithin = 60 * time.Second
)

// chooser picks the checkpoint a bundle is proved against: the newest
// (published) one that is clean, waiting for one up to wait.
type chooser struct {
	db        ledger.DBTX
	published bool          // only published checkpoints
	wait      time.Duration // how long to wait for a clean one at least atLeast
	// atLeast, when set, is the smallest size that covers what is asked
	// for (a request's events); after the wait the newest clean one is
	// taken even if it is smaller.
	atLeast func(ctx context.Context) (uint64, error)
	// anyway: when no clean checkpoint is found, take the newest (VerifyDB:
	// the verifier then reports the unattested outcome as a fault).
	anyway bool
}

// Choice is the checkpoint chosen, and why not a newer one.
type Choice struct {
	Checkpoint ledger.Checkpoint
	Newest     uint64        // the size of the newest checkpoint looked at
	Unclean    *Unclean      // why Newest was not taken, when it was not
	Waited     time.Duration // how long the choice waited for a newer one
}

// Unclean says why a checkpoint is not clean: the first final outcome
// below it whose attestation is not sealed below it.
type Unclean struct {
	Size    uint64 `json:"size"`
	Request string `json:"request"`
	Outcome string `json:"outcome"` // the outcome's event type
	Leaf    uint64 `json:"leaf"`
}

func (u *Unclean) String() string {
	return fmt.Sprintf("checkpoint %d holds the end of request %s (%s at leaf %d) but not its attestation",
		u.Size, u.Request, u.Outcome, u.Leaf)
}

func (c *chooser) choose(ctx context.Context) (Choice, error) {
	start := time.Now()
	deadline := start.Add(c.wait)
	var ch Choice
	var best *ledger.Checkpoint // the newest clean one seen
	for {
		cp, err := ledger.NewestCheckpoint(ctx, c.db, c.published)
		if errors.Is(err, ledger.ErrNoCheckpoint) {
			return ch, c.noCheckpoint(ctx)
		}
		if err != nil {
			return ch, fmt.Errorf("export: %w", err)
		}
		if cp.Size > ch.Newest {
			ch.Newest = cp.Size
			done, err := c.consider(ctx, &ch, cp, &best)
			if done || err != nil {
				ch.Waited = time.Since(start)
				return ch, err
			}
		}
		if !time.Now().Before(deadline) {
			break
		}
		if !retry.Sleep(ctx, min(pollEvery, time.Until(deadline))) {
			return ch, ctx.Err()
		}
	}
	ch.Waited = time.Since(start)
	if best != nil {
		ch.Checkpoint = *best
		return ch, nil
	}
	return c.older(ctx, ch)
}

// consider checks cp, the newest checkpoint: taken when it is clean and
// large enough; remembered in best when clean.
func (c *chooser) consider(ctx context.Context, ch *Choice, cp ledger.Checkpoint, best **ledger.Checkpoint) (bool, error) {
	u, err := unclean(ctx, c.db, cp.Size)
	if err != nil {
		return false, err
	}
	ch.Unclean = u
	if u != nil {
		return false, nil
	}
	*best = &cp
	want := uint64(0)
	if c.atLeast != nil {
		if want, err = c.atLeast(ctx); err != nil {
			return false, err
		}
	}
	if cp.Size < want {
		return false, nil
	}
	ch.Checkpoint = cp
	return true, nil
}

// older takes the newest clean checkpoint before the newest, or (anyway)
// the newest.
func (c *chooser) older(ctx context.Context, ch Choice) (Choice, error) {
	rows, err := c.db.Query(ctx, queryOlderCheckpoints, int64(ch.Newest), c.published, olderTried)
	if err != nil {
		return ch, fmt.Errorf("export: read checkpoints: %w", err)
	}
	sizes, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return ch, fmt.Errorf("export: read checkpoints: %w", err)
	}
	take := func(size uint64) (Choice, error) {
		cp, err := ledger.CheckpointAt(ctx, c.db, size)
		if err != nil {
			return ch, fmt.Errorf("export: %w", err)
		}
		ch.Checkpoint = cp
		return ch, nil
	}
	for _, s := range sizes {
		u, err := unclean(ctx, c.db, uint64(s))
		if err != nil {
			return ch, err
		}
		if u == nil {
			return take(uint64(s))
		}
	}
	if c.anyway {
		return take(ch.Newest)
	}
	return ch, fmt.Errorf("export: %w: %s, and neither is any of the %d checkpoints before it "+
		"(an executor attests a request ended in SQL within seconds: is one running?)", ErrNoCleanCheckpoint, ch.Unclean, len(sizes))
}

// noCheckpoint explains why there is no checkpoint to choose.
func (c *chooser) noCheckpoint(ctx context.Context) error {
	var exists bool
	if err := c.db.QueryRow(ctx, queryAnyCheckpoint).Scan(&exists); err != nil {
		return fmt.Errorf("export: read checkpoints: %w", err)
	}
	switch {
	case c.published && exists:
		return noCheckpointError("export: the log has no published checkpoint yet: its checkpoints await their witnesses' " +
			"cosignatures ([sealer] witness_keys; is `execledger witness` running?)")
	case c.published:
		return noCheckpointError("export: the log has no published checkpoint yet: is serve running with [sealer] note_key_file?")
	}
	return noCheckpointError("export: the log has no checkpoint yet: is serve running with [sealer] note_key_file?")
}

// noCheckpointError is ErrNoCheckpoint, with why.
type noCheckpointError string

func (e noCheckpointError) Error() string { return string(e) }

func (noCheckpointError) Is(target error) bool { return target == ErrNoCheckpoint }

// unclean returns the first final outcome among the cleanWindow leaves
// below size whose attestation is coming but not sealed below size (see
// queryUnattested); nil when there is none.
func unclean(ctx context.Context, db ledger.DBTX, size uint64) (*Unclean, error) {
	from := uint64(0)
	if size > cleanWindow {
		from = size - cleanWindow
	}
	u := Unclean{Size: size}
	var leaf int64
	err := db.QueryRow(ctx, queryUnattested, int64(from), int64(size), attestWithin.Seconds()).Scan(&u.Request, &u.Outcome, &leaf)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export: check checkpoint %d: %w", size, err)
	}
	u.Leaf = uint64(leaf)
	return &u, nil
}
