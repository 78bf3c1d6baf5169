package export

import (
	"context"
	"io"

	"github.com/execledger/execledger/internal/bundle"
)

// feedBatch is how many records the producer hands over at once.
const feedBatch = 1024

// feed runs a producer of records in its own goroutine, so that reading
// the database overlaps writing or verifying what was read, and hands its
// records out one by one (next).
type feed struct {
	ctx     context.Context
	cancel  context.CancelFunc
	batches chan []bundle.Record
	cur     []bundle.Record
	done    chan struct{}
	err     error // the producer's, once done is closed
}

// produceFunc emits a bundle's records in order.
type produceFunc func(ctx context.Context, emit func(bundle.Record) error) error

func startFeed(ctx context.Context, produce produceFunc) *feed {
	ctx, cancel := context.WithCancel(ctx)
	f := &feed{ctx: ctx, cancel: cancel, batches: make(chan []bundle.Record, 4), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.batches)
		batch := make([]bundle.Record, 0, feedBatch)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			select {
			case f.batches <- batch:
			case <-ctx.Done():
				return ctx.Err()
			}
			batch = make([]bundle.Record, 0, feedBatch)
			return nil
		}
		f.err = produce(ctx, func(r bundle.Record) error {
			if batch = append(batch, r); len(batch) == feedBatch {
				return flush()
			}
			return nil
		})
		if f.err == nil {
			f.err = flush()
		}
	}()
	return f
}

// next returns the next record; io.EOF after the last, or the producer's
// error.
func (f *feed) next() (bundle.Record, error) {
	for len(f.cur) == 0 {
		select {
		case b, ok := <-f.batches:
			if !ok {
				<-f.done
				if f.err != nil {
					return nil, f.err
				}
				return nil, io.EOF
			}
			f.cur = b
		case <-f.ctx.Done():
			return nil, f.ctx.Err()
		}
	}
	r := f.cur[0]
	f.cur = f.cur[1:]
	return r, nil
}

// close stops the producer and waits for it.
func (f *feed) close() {
	f.cancel()
	for range f.batches {
	}
	<-f.done
}
