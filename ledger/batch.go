package ledger

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// Batching of Client.Submit: a small group commit.
//
// A call that finds fewer than maxInFlight calls in flight (the pool's
// connections) goes out at once, from its own goroutine, as one
// ledger.submit: a lone caller waits for nothing but its own statement. A
// call that finds them all in flight queues. When an in-flight call
// returns, the queued calls (up to maxBatch of them, maxBatchBytes of
// input) go out together as one ledger.submit_many from a goroutine of the
// batcher's, and so on until the queue is empty.
//
// Each caller gets its own result. ledger.submit_many writes all of a batch
// or nothing; when it refuses an element (SQLSTATE and words of submit's,
// with the element's index), that element's caller gets the error submit
// would have given it, and the rest of the batch is sent again without it.
// An error that is no element's (the connection broke, the server shut
// down) goes to every caller of the batch, as it would have to each of
// their own calls. A caller whose context ends while it waits in the queue
// leaves it and is not submitted; one whose context ends while its batch is
// in flight gets the context's error, and its request may or may not be
// recorded, as with a call of its own: retry with the same IdempotencyKey.
// A batch's statement is cancelled only when every caller in it has gone.
//
// Within a batch, requests are recorded in the order their calls queued;
// an idempotency key repeated in a batch returns the first one's id, as
// when the calls run one after another.
type submitBatcher struct {
	db            DBTX
	maxInFlight   int
	maxBatch      int
	maxBatchBytes int

	mu       sync.Mutex
	inFlight int
	queue    []*pendingSubmit
}

// The defaults. As many calls in flight as the pool has connections: while
// a connection is free a call takes it at once, as without batching; only
// calls that would wait for a connection queue and go together. Fewer in
// flight than connections measured slower with as many callers as
// connections (one call's flush no longer overlaps the others'), faster
// only with many more callers; docs/benchmarks.md, "Issue 24".
const (
	defaultSubmitBatch      = 256
	defaultSubmitBatchBytes = 4 << 20
)

func newSubmitBatcher(db DBTX, maxInFlight int) *submitBatcher {
	return &submitBatcher{db: db, maxInFlight: max(maxInFlight, 1), maxBatch: defaultSubmitBatch,
		maxBatchBytes: defaultSubmitBatchBytes}
}

type pendingSubmit struct {
	ctx  context.Context
	args submitArgs
	// taken is set, under the batcher's lock, when a batch takes it out
	// of the queue.
	taken bool
	id    uuid.UUID
	err   error
	done  chan struct{}
}

func (b *submitBatcher) submit(ctx context.Context, a submitArgs) (uuid.UUID, error) {
	b.mu.Lock()
	if b.inFlight < b.maxInFlight {
		b.inFlight++
		b.mu.Unlock()
		id, err := a.submit(ctx, b.db)
		b.release()
		return id, err
	}
	p := &pendingSubmit{ctx: ctx, args: a, done: make(chan struct{})}
	b.queue = append(b.queue, p)
	b.mu.Unlock()

	select {
	case <-p.done:
		return p.id, p.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	if !p.taken {
		b.queue = slices.DeleteFunc(b.queue, func(q *pendingSubmit) bool { return q == p })
		b.mu.Unlock()
		return uuid.Nil, fmt.Errorf("ledger: submit: %w", ctx.Err())
	}
	b.mu.Unlock()
	select {
	case <-p.done: // it finished as the context ended
		return p.id, p.err
	default:
		return uuid.Nil, fmt.Errorf("ledger: submit: %w (the request may have been recorded)", ctx.Err())
	}
}

// release ends an in-flight call: the slot goes to the queued calls, if
// any, else it is freed.
func (b *submitBatcher) release() {
	b.mu.Lock()
	batch := b.takeLocked()
	if len(batch) == 0 {
		b.inFlight--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go b.drain(batch)
}

// drain sends batches in one slot until the queue is empty.
func (b *submitBatcher) drain(batch []*pendingSubmit) {
	for len(batch) > 0 {
		b.send(batch)
		b.mu.Lock()
		batch = b.takeLocked()
		if len(batch) == 0 {
			b.inFlight--
		}
		b.mu.Unlock()
	}
}

// takeLocked takes the next batch off the queue: the oldest calls whose
// contexts have not ended, up to maxBatch calls and maxBatchBytes of input
// (one call at least).
func (b *submitBatcher) takeLocked() []*pendingSubmit {
	n, size := 0, 0
	for n < len(b.queue) && n < b.maxBatch {
		s := len(b.queue[n].args.input)
		if n > 0 && size+s > b.maxBatchBytes {
			break
		}
		size += s
		n++
	}
	batch := make([]*pendingSubmit, 0, n)
	for _, p := range b.queue[:n] {
		p.taken = true
		batch = append(batch, p)
	}
	b.queue = slices.Delete(b.queue, 0, n)
	return batch
}

// send submits batch and delivers each call's result.
func (b *submitBatcher) send(batch []*pendingSubmit) {
	// The statement's context ends when every caller's has.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(batch)))
	for _, p := range batch {
		stop := context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}

	for len(batch) > 0 {
		if len(batch) == 1 {
			p := batch[0]
			p.id, p.err = p.args.submit(ctx, b.db)
			close(p.done)
			return
		}
		args := make([]submitArgs, len(batch))
		for i, p := range batch {
			args[i] = p.args
		}
		ids, elem, err := submitMany(ctx, b.db, args)
		if elem == nil && err == nil {
			for i, p := range batch {
				p.id = ids[i]
				close(p.done)
			}
			return
		}
		if elem == nil {
			err = sqlError("submit", err)
			for _, p := range batch {
				p.err = err
				close(p.done)
			}
			return
		}
		// That element's caller gets submit's error; the others go again.
		p := batch[elem.Index]
		p.err = elem.Err
		close(p.done)
		batch = slices.Delete(slices.Clone(batch), elem.Index, elem.Index+1)
	}
}
