package executor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/execledger/execledger/internal/retry"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channels the executor listens on.
const (
	channelPending = "ledger_request_pending"
	channelCancel  = "ledger_request_cancel"
)

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// listener holds a connection of its own that LISTENs on
// ledger_request_pending, which wakes the claimer (pending), and on
// ledger_request_cancel, which has the flags of the claims held read
// (cancel); it reconnects after failures. A notification is a hint, never
// an authority: anyone who can connect may send one, so only the flag
// ledger.cancel sets (after its own checks) stops a call. Missed
// notifications are covered by polling and by the heartbeat, which also
// reads the flags.
type listener struct {
	pool    *pgxpool.Pool // whose configuration the connection copies
	logger  *slog.Logger
	pending func()
	cancel  func(context.Context) error
}

func (l *listener) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		l.logger.Warn("listener", slog.Any("error", err))
		retry.Sleep(ctx, backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (l *listener) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{channelPending, channelCancel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	l.pending() // anything sent while we were away
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case channelPending:
			l.pending()
		case channelCancel:
			if err := l.cancel(ctx); err != nil && ctx.Err() == nil {
				l.logger.Warn("read cancellation flags", slog.Any("error", err))
			}
		}
	}
}
