package executor

import (
	"bytes"
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claimHolder is what the heartbeat and the listener need of the runner:
// the claims it holds, and a way to stop their calls.
type claimHolder interface {
	// held lists the requests held and their claims, in id order.
	held() (ids, claims []uuid.UUID)
	// cancel stops the call of request id, if it runs here, with cause.
	cancel(id uuid.UUID, cause error)
	// lost stops the call of a claim that is no longer this executor's.
	lost(id uuid.UUID)
}

// heartbeat extends the leases of every claim this executor holds, in one
// statement, every third of a lease. A claim that is no longer ours (it
// was rescued) has its call stopped; a claim flagged by ledger.cancel has
// its call cancelled, covering a lost cancel NOTIFY.
type heartbeat struct {
	pool   *pgxpool.Pool
	lease  time.Duration
	claims claimHolder
	logger *slog.Logger
}

func (h *heartbeat) run(ctx context.Context) {
	t := time.NewTicker(h.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := h.beat(ctx); err != nil && ctx.Err() == nil {
			h.logger.Warn("heartbeat", slog.Any("error", err))
		}
	}
}

func (h *heartbeat) beat(ctx context.Context) error {
	ids, claims := h.claims.held()
	if len(ids) == 0 {
		return nil
	}
	rows, err := h.pool.Query(ctx, queryHeartbeat, ids, claims, h.lease.String())
	if err != nil {
		return err
	}
	held := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		var cancel bool
		if err := rows.Scan(&id, &cancel); err != nil {
			rows.Close()
			return err
		}
		held[id] = true
		if cancel {
			h.claims.cancel(id, errCancelled)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if !held[id] {
			h.claims.lost(id)
		}
	}
	return nil
}

// readCancelFlags cancels the local calls whose requests ledger.cancel has
// flagged (the listener calls it on a cancel NOTIFY).
func (h *heartbeat) readCancelFlags(ctx context.Context) error {
	ids, claims := h.claims.held()
	if len(ids) == 0 {
		return nil
	}
	rows, err := h.pool.Query(ctx, queryCancelFlags, ids, claims)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return err
		}
		h.claims.cancel(id, errCancelled)
	}
	return rows.Err()
}

// sortClaims orders ids (and their claims alongside) so that every
// statement that locks several queue rows locks them in one order.
func sortClaims(ids, claims []uuid.UUID) {
	idx := make([]int, len(ids))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return bytes.Compare(ids[idx[a]][:], ids[idx[b]][:]) < 0 })
	si, sc := make([]uuid.UUID, len(ids)), make([]uuid.UUID, len(ids))
	for k, i := range idx {
		si[k], sc[k] = ids[i], claims[i]
	}
	copy(ids, si)
	copy(claims, sc)
}
