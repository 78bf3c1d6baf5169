package bench

import (
	"context"
	"strconv"
)

// target is one system under test, set up in its own database.
type target interface {
	// name is the system's name in reports.
	name() string
	// insertBatch inserts the requests numbered first .. first+n-1 in one
	// transaction (burndown's preload).
	insertBatch(ctx context.Context, first, n int) error
	// submit inserts request seq on its own, as a service would
	// (continuous mode).
	submit(ctx context.Context, seq int) error
	// start starts the workers. stop stops them and waits until they have
	// written everything they hold; exited is closed if they stop by
	// themselves (a failure: stop then returns why).
	start(ctx context.Context) (stop func(context.Context) error, exited <-chan struct{}, err error)
	// depth is how many requests are not final yet, as committed.
	depth(ctx context.Context) (int64, error)
	// summarize fills the states, latencies and events of s from the database.
	summarize(ctx context.Context, s *Summary) error
	// close releases the connections.
	close()
}

// Requests share per-run budgets: callsPerRun consecutive requests make up
// one run, which is the executor's default budget, so every request is
// charged and none is refused.
const callsPerRun = 4

func runID(seq int) string { return "bench-" + strconv.Itoa(seq/callsPerRun) }

// echoInput is the input of every benchmark request.
const echoInput = `{"text":"hello"}`

// workConns is the size of the workers' pool, for both systems.
const workConns = 8
