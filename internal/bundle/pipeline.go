package bundle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Batching of the parallel pipeline.
const (
	batchRecords  = 512     // records per batch
	batchBytes    = 1 << 20 // bytes of lines per batch
	maxLine       = 64 << 20
	progressEvery = 1 << 14 // events between progress calls
)

// errLineTooLong stops reading a line longer than maxLine.
var errLineTooLong = fmt.Errorf("a line is longer than %d MiB", maxLine>>20)

// Verify reads a bundle from r and verifies it with keys. Lines are decoded
// and their events hashed and their attestations' signatures checked in
// parallel (GOMAXPROCS workers); the checks that depend on order run in
// order. progress, if not nil, is called with the number of events checked
// so far, every 16384 events and at the end.
//
// The report is the verdict on the bundle; the error is for what is not
// one: unusable keys, a read error, ctx done.
func Verify(ctx context.Context, r io.Reader, keys Keys, progress func(events int64)) (Report, error) {
	v, err := NewVerifier(keys)
	if err != nil {
		return Report{}, err
	}
	return v.run(ctx, fillLines(bufio.NewReaderSize(r, 1<<20)), progress)
}

// VerifyRecords verifies the records next returns until it returns io.EOF,
// as Verify does a file: a verifier reading the live database gets the
// same checks, with the same parallelism. next is called from one
// goroutine, not after the verdict is settled or ctx is done. Any other
// error from next is returned.
func VerifyRecords(ctx context.Context, next func() (Record, error), keys Keys, progress func(events int64)) (Report, error) {
	return VerifyLive(ctx, next, keys, nil, progress)
}

// VerifyLive is VerifyRecords for a log some of whose leaves are archived
// (verify --db after execledger archive): a full scope's ranges may leave
// out exactly the archived ranges, whose compact ranges must then join the
// leaves around them into the newest checkpoint's root.
func VerifyLive(ctx context.Context, next func() (Record, error), keys Keys, archived []Archived, progress func(events int64)) (Report, error) {
	v, err := NewVerifier(keys)
	if err != nil {
		return Report{}, err
	}
	v.archived = archived
	return v.run(ctx, func(ctx context.Context, b *batch) error {
		for len(b.recs) < batchRecords {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := next()
			if err != nil {
				return err
			}
			b.recs = append(b.recs, r)
		}
		return nil
	}, progress)
}

// batch is a run of lines or records, prepared by a worker.
type batch struct {
	buf   []byte   // holds the lines
	lines [][]byte // in buf
	recs  []Record
	out   []prepared
	done  chan struct{} // closed when out is ready
}

// run feeds v what fill reads, batch by batch: a reader fills batches, the
// workers prepare them, and run feeds them to v in order.
func (v *Verifier) run(ctx context.Context, fill func(context.Context, *batch) error, progress func(int64)) (Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	workers := runtime.GOMAXPROCS(0)
	todo := make(chan *batch, workers)
	order := make(chan *batch, 2*workers)
	free := make(chan []byte, 4*workers) // line buffers to reuse: nothing prepared points into them
	var wg sync.WaitGroup
	var readErr error
	wg.Go(func() { readErr = read(ctx, fill, free, todo, order) })
	for range workers {
		wg.Go(func() { prepareBatches(v.keys, todo, free) })
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	reported := int64(0)
	for b := range order {
		select {
		case <-b.done:
		case <-ctx.Done():
			return Report{}, ctx.Err()
		}
		for _, p := range b.out {
			v.feed(p)
		}
		if progress != nil && v.rep.Events-reported >= progressEvery {
			reported = v.rep.Events
			progress(reported)
		}
		if v.fault != nil {
			cancel()
			break
		}
	}
	if err := ctx.Err(); err != nil && v.fault == nil {
		return Report{}, err
	}
	cancel()
	wg.Wait()
	switch {
	case errors.Is(readErr, errLineTooLong):
		v.feed(prepared{fault: fault(Malformed, "%v", readErr)})
	case readErr != nil && !errors.Is(readErr, context.Canceled):
		return Report{}, fmt.Errorf("bundle: read: %w", readErr)
	}
	if progress != nil {
		progress(v.rep.Events)
	}
	return v.Report(), nil
}

// read fills batches until fill returns an error (io.EOF at the end, which
// read returns as nil) and hands each to a worker (todo) and, in order, to
// the verifier (order).
func read(ctx context.Context, fill func(context.Context, *batch) error, free <-chan []byte, todo, order chan<- *batch) error {
	defer close(todo)
	defer close(order)
	for {
		b := &batch{done: make(chan struct{})}
		select {
		case b.buf = <-free:
		default:
		}
		err := fill(ctx, b)
		if len(b.lines)+len(b.recs) > 0 {
			select {
			case order <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case todo <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func prepareBatches(keys Keys, todo <-chan *batch, free chan<- []byte) {
	p := preparer{keys: keys}
	for b := range todo {
		b.out = make([]prepared, len(b.lines)+len(b.recs))
		for i, l := range b.lines {
			b.out[i] = p.line(l)
		}
		for i, r := range b.recs {
			b.out[i] = p.record(r)
		}
		if b.buf != nil {
			select {
			case free <- b.buf[:0]:
			default:
			}
			b.buf, b.lines = nil, nil
		}
		close(b.done)
	}
}

// fillLines returns a fill function reading lines from br: each line
// without its "\n", the last one also without it.
func fillLines(br *bufio.Reader) func(context.Context, *batch) error {
	return func(_ context.Context, b *batch) error {
		buf := b.buf[:0]
		ends := make([]int, 0, batchRecords)
		defer func() {
			start := 0
			for _, end := range ends {
				b.lines = append(b.lines, buf[start:end:end])
				start = end
			}
			b.buf = buf
		}()
		for len(ends) < batchRecords && len(buf) < batchBytes {
			start := len(buf)
			var err error
			buf, err = appendLine(buf, br)
			if len(buf) > start || err == nil {
				ends = append(ends, len(buf))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// appendLine appends the next line of br to dst, without its newline. At
// the end of the input it returns io.EOF, with what followed the last
// newline appended.
func appendLine(dst []byte, br *bufio.Reader) ([]byte, error) {
	start := len(dst)
	for {
		chunk, err := br.ReadSlice('\n')
		dst = append(dst, chunk...)
		switch {
		case err == nil:
			return dst[:len(dst)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(dst)-start > maxLine {
				return dst[:start], errLineTooLong
			}
		default:
			return dst, err
		}
	}
}

// ReadRecords parses the bundle r line by line, in order, and calls fn
// with each record; it stops at the first line that is not a record and
// at fn's first error. It checks nothing else: Verify does.
func ReadRecords(r io.Reader, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var buf []byte
	for n := 1; ; n++ {
		line, err := appendLine(buf[:0], br)
		buf = line
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(line) > 0 {
			rec, perr := ParseRecord(line)
			if perr != nil {
				return fmt.Errorf("bundle: line %d: %w", n, perr)
			}
			if ferr := fn(rec); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return nil
		}
	}
}
