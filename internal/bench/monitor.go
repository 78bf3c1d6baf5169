package bench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// monitor follows a run from the database: it polls the target's queue
// depth, prints a progress line every interval and tells when the work is
// done. Completions are counted as inserted minus not yet final, both as
// committed, the same way for every system.
type monitor struct {
	t        target
	out      io.Writer
	interval time.Duration
	stall    time.Duration
	inserted func() int64
	exited   <-chan struct{} // closed when the workers stop by themselves
	start    time.Time

	depth     int64 // at the last poll
	completed int64 // at the last poll

	nextLine      time.Time
	lastLine      time.Time
	lastCompleted int64 // at the last line

	progressAt time.Time // when completed last grew
}

func newMonitor(t target, cfg Config, start time.Time, exited <-chan struct{}, inserted func() int64) *monitor {
	m := &monitor{t: t, out: cfg.Progress, interval: cfg.Interval, stall: cfg.Stall, inserted: inserted,
		exited: exited, start: start, nextLine: start.Add(cfg.Interval), lastLine: start, progressAt: start}
	fmt.Fprintf(m.out, "%s %s\n  %7s %11s %12s %9s\n", t.name(), "working", "elapsed", "completed", "requests/s", "depth")
	return m
}

// until polls until deadline or, when deadline is zero, until no request
// is left, and returns when it saw that. A window (deadline set) stays
// open past its deadline until a request has completed: a throughput of
// nothing, from a start slower than the window, measures nothing. It
// fails when nothing completes for the stall time.
func (m *monitor) until(ctx context.Context, deadline time.Time) (time.Time, error) {
	drain := deadline.IsZero()
	for {
		if err := m.poll(ctx); err != nil {
			return time.Time{}, err
		}
		now := time.Now()
		done := (drain && m.depth == 0) || (!drain && !now.Before(deadline) && m.completed > 0)
		if done || !now.Before(m.nextLine) {
			m.line(now)
		}
		if done {
			return now, nil
		}
		if now.Sub(m.progressAt) > m.stall {
			return time.Time{}, fmt.Errorf("bench: %s: nothing completed for %s; %d requests not final", m.t.name(), m.stall, m.depth)
		}
		wait := m.nextLine.Sub(now)
		if drain {
			wait = min(wait, m.drainPoll(now))
		} else if now.Before(deadline) {
			wait = min(wait, deadline.Sub(now))
		} else {
			wait = min(wait, 20*time.Millisecond) // past the deadline, waiting for a first completion
		}
		if err := m.sleep(ctx, wait); err != nil {
			return time.Time{}, err
		}
	}
}

func (m *monitor) poll(ctx context.Context) error {
	d, err := m.t.depth(ctx)
	if err != nil {
		return fmt.Errorf("bench: %s: queue depth: %w", m.t.name(), err)
	}
	m.depth = d
	if c := m.inserted() - d; c > m.completed {
		m.completed = c
		m.progressAt = time.Now()
	}
	return nil
}

// drainPoll polls more often as the end nears, so that the drain time is
// not rounded up to the line interval: a fifth of the expected time left,
// between 5 ms and the interval.
func (m *monitor) drainPoll(now time.Time) time.Duration {
	elapsed := now.Sub(m.start).Seconds()
	if m.completed == 0 || elapsed <= 0 {
		return 100 * time.Millisecond
	}
	left := time.Duration(float64(m.depth) / (float64(m.completed) / elapsed) * float64(time.Second))
	return min(max(left/5, 5*time.Millisecond), m.interval)
}

func (m *monitor) line(now time.Time) {
	span := now.Sub(m.lastLine)
	if span < time.Millisecond {
		return
	}
	n := m.completed - m.lastCompleted
	fmt.Fprintf(m.out, "  %6.1fs %11d %12.0f %9d\n", now.Sub(m.start).Seconds(), n, float64(n)/span.Seconds(), m.depth)
	m.lastLine, m.lastCompleted = now, m.completed
	for !m.nextLine.After(now) {
		m.nextLine = m.nextLine.Add(m.interval)
	}
}

func (m *monitor) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-m.exited:
		return fmt.Errorf("bench: %s: the workers stopped by themselves", m.t.name())
	case <-t.C:
		return nil
	}
}
