package executor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Channels the executor listens on.
const (
	channelPending = "ledger_request_pending"
	channelCancel  = "ledger_request_cancel"
)

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// listen wakes the fetch loop on ledger_request_pending and, on
// ledger_request_cancel, reads the cancellation flags of the claims this
// executor holds, reconnecting after failures. A notification is a hint,
// never an authority: anyone who can connect may send one, so only the
// flag ledger.cancel sets (after its own checks) stops a call. Missed
// notifications are covered by polling and by the heartbeat, which also
// reads the flags.
func (e *Executor) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := e.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		e.logger.Warn("listener", slog.Any("error", err))
		sleep(ctx, backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (e *Executor) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, e.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{channelPending, channelCancel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	e.poke() // anything sent while we were away
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case channelPending:
			e.poke()
		case channelCancel:
			if err := e.readCancelFlags(ctx); err != nil && ctx.Err() == nil {
				e.logger.Warn("read cancellation flags", slog.Any("error", err))
			}
		}
	}
}

// readCancelFlags cancels the local calls whose requests ledger.cancel has
// flagged.
func (e *Executor) readCancelFlags(ctx context.Context) error {
	ids, claims := e.inflightClaims()
	if len(ids) == 0 {
		return nil
	}
	rows, err := e.pool.Query(ctx, queryCancelFlags, ids, claims)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return err
		}
		e.cancelJob(id, errCancelled)
	}
	return rows.Err()
}

// cancelJob stops a local call, if this executor runs it.
func (e *Executor) cancelJob(id uuid.UUID, cause error) {
	e.mu.Lock()
	j := e.inflight[id]
	e.mu.Unlock()
	if j != nil && j.cancel != nil {
		j.cancel(cause)
	}
}
