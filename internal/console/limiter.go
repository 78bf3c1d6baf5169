package console

import (
	"sync"
	"time"
)

// limiter admits at most n attempts per key in any window: a sliding log
// of attempt times per key. Sign-in is limited per client address and,
// apart, per login name, so neither many names from one address nor one
// name from many addresses can be tried quickly.
type limiter struct {
	n      int
	window time.Duration
	now    func() time.Time

	mu sync.Mutex
	m  map[string][]time.Time
}

// maxLimiterKeys bounds the memory the limiter uses; beyond it, keys whose
// attempts are all outside the window are forgotten first.
const maxLimiterKeys = 100000

func newLimiter(n int, window time.Duration, now func() time.Time) *limiter {
	return &limiter{n: n, window: window, now: now, m: map[string][]time.Time{}}
}

// allow records an attempt for each key and reports whether every key was
// under its limit. A refused attempt is recorded too: hammering keeps the
// window full.
func (l *limiter) allow(keys ...string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) > maxLimiterKeys {
		l.forget(now)
	}
	ok := true
	for _, k := range keys {
		ts := l.m[k]
		i := 0
		for i < len(ts) && now.Sub(ts[i]) >= l.window {
			i++
		}
		ts = ts[i:]
		if len(ts) >= l.n {
			ok = false
		}
		if len(ts) < 4*l.n { // bounded per key
			ts = append(ts, now)
		}
		l.m[k] = ts
	}
	return ok
}

func (l *limiter) forget(now time.Time) {
	for k, ts := range l.m {
		if len(ts) == 0 || now.Sub(ts[len(ts)-1]) >= l.window {
			delete(l.m, k)
		}
	}
}
