package bench

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// slowStart is a target whose first request completes only when the test
// lets it.
type slowStart struct {
	target
	done atomic.Bool
}

func (*slowStart) name() string { return "slow" }
func (s *slowStart) depth(context.Context) (int64, error) {
	if s.done.Load() {
		return 4, nil
	}
	return 5, nil
}

// TestWindowWaitsForAFirstCompletion: a window whose deadline passes with
// nothing completed stays open until a request completes, and closes then.
func TestWindowWaitsForAFirstCompletion(t *testing.T) {
	t.Parallel()
	tgt := &slowStart{}
	start := time.Now()
	m := newMonitor(tgt, Config{Progress: io.Discard, Interval: time.Second, Stall: time.Hour}, start, nil,
		func() int64 { return 5 })
	type result struct {
		end time.Time
		err error
	}
	out := make(chan result, 1)
	go func() {
		end, err := m.until(context.Background(), start.Add(10*time.Millisecond))
		out <- result{end, err}
	}()
	time.Sleep(200 * time.Millisecond) // past the deadline, nothing completed
	select {
	case r := <-out:
		t.Fatalf("the window closed at %s with nothing completed (%v)", r.end.Sub(start), r.err)
	default:
	}
	tgt.done.Store(true)
	select {
	case r := <-out:
		if r.err != nil || m.completed != 1 {
			t.Fatalf("after the first completion: %v, %d completed", r.err, m.completed)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the window stayed open after a request completed")
	}
}
