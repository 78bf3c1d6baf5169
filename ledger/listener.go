package ledger

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// listener holds one connection that LISTENs on a channel and wakes the
// subscribers of each payload (all of them on an empty payload). With no
// channel given it listens on the login role's principal's completion
// channel, ledger.notify_channel(), or on ChannelRequestDone when the role
// has no principal. It connects on the first subscription and
// reconnects after a failure; whenever it (re)connects it wakes every
// subscriber, since notifications sent while it was away are lost.
type listener struct {
	config  *pgx.ConnConfig
	channel string

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	ready   chan struct{} // closed while a LISTEN is in force; replaced on reconnect
	started bool
	cancel  context.CancelFunc
	stopped chan struct{}
}

func newListener(config *pgx.ConnConfig, channel string) *listener {
	return &listener{
		config:  config.Copy(),
		channel: channel,
		subs:    make(map[string]map[chan struct{}]struct{}),
		ready:   make(chan struct{}),
	}
}

// subscribe registers interest in key. The returned channel receives a
// value after a notification for key (or a reconnect). subscribe waits,
// boundedly, for the LISTEN to be in force so that a caller that reads state
// after subscribing cannot miss the notification in between.
func (l *listener) subscribe(ctx context.Context, key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	if l.subs[key] == nil {
		l.subs[key] = make(map[chan struct{}]struct{})
	}
	l.subs[key][ch] = struct{}{}
	if !l.started {
		l.started = true
		runCtx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		l.stopped = make(chan struct{})
		go l.run(runCtx)
	}
	ready := l.ready
	l.mu.Unlock()

	wait := time.NewTimer(2 * time.Second)
	defer wait.Stop()
	select {
	case <-ready:
	case <-wait.C:
	case <-ctx.Done():
	}
	return ch, func() {
		l.mu.Lock()
		delete(l.subs[key], ch)
		if len(l.subs[key]) == 0 {
			delete(l.subs, key)
		}
		l.mu.Unlock()
	}
}

func (l *listener) close() {
	l.mu.Lock()
	cancel, stopped := l.cancel, l.stopped
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.stopped)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := l.listenOnce(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

func (l *listener) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.config)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	channel := l.channel
	if channel == "" {
		var own *string
		if err := conn.QueryRow(ctx, queryNotifyChannel).Scan(&own); err != nil {
			return err
		}
		channel = ChannelRequestDone
		if own != nil {
			channel = *own
		}
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	l.mu.Lock()
	close(l.ready)
	l.wakeAllLocked()
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.ready = make(chan struct{})
		l.wakeAllLocked()
		l.mu.Unlock()
	}()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		if n.Payload == "" {
			l.wakeAllLocked()
		} else {
			for ch := range l.subs[n.Payload] {
				wake(ch)
			}
		}
		l.mu.Unlock()
	}
}

func (l *listener) wakeAllLocked() {
	for _, set := range l.subs {
		for ch := range set {
			wake(ch)
		}
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
