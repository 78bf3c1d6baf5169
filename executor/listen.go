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

// listen wakes the fetch loop on ledger_request_pending and cancels local
// calls on ledger_request_cancel, reconnecting after failures. Missed
// notifications are covered by polling and by the heartbeat, which also
// reads cancellation flags.
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
			if id, err := uuid.Parse(n.Payload); err == nil {
				e.cancelJob(id, errCancelled)
			}
		}
	}
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
