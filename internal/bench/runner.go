package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// preloadBatch is how many requests burndown inserts per transaction.
const preloadBatch = 100

// Run runs the benchmark cfg describes: each system in turn (baselines first),
// each against its own fresh database. Progress lines go to
// cfg.Progress as they happen; the caller prints the Report. A Report
// whose Check fails is returned with a nil error: its figures are there to
// be looked at, not trusted.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	machine, err := machineFacts(ctx, cfg.AdminURL)
	if err != nil {
		return nil, err
	}
	r := &Report{Mode: cfg.Mode, Machine: machine}
	for _, sys := range cfg.systems() {
		s, err := runSystem(ctx, cfg, sys)
		if err != nil {
			return r, err
		}
		r.Runs = append(r.Runs, s)
	}
	r.setRatio()
	return r, nil
}

// runSystem measures one system in a database of its own.
func runSystem(ctx context.Context, cfg Config, sys string) (s *Summary, err error) {
	db, err := createDatabase(ctx, cfg.AdminURL)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !cfg.Keep {
			err = errors.Join(err, db.drop(context.WithoutCancel(ctx)))
		}
	}()
	fmt.Fprintf(cfg.Progress, "\n%s %s: database %s\n", sys, cfg.Mode, db.Name)
	t, err := newTarget(ctx, db, cfg, sys)
	if err != nil {
		return nil, err
	}
	defer t.close()
	s = &Summary{System: sys, Mode: cfg.Mode, Submitters: cfg.Submitters, Workers: cfg.Workers, Rate: cfg.Rate}
	if cfg.Keep {
		s.Database = db.Name
	}
	before, cpuOK := sampleCPU(cfg.PostmasterPID)
	if cfg.Mode == ModeBurndown {
		err = burndown(ctx, cfg, t, s)
	} else {
		err = continuous(ctx, cfg, t, s)
	}
	if err != nil {
		return nil, err
	}
	if after, ok := sampleCPU(cfg.PostmasterPID); ok && cpuOK {
		s.CPU = perRequest(before, after, s.Requests)
	}
	if err := t.summarize(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

func newTarget(ctx context.Context, db *Database, cfg Config, sys string) (target, error) {
	switch sys {
	case SystemRiver:
		return newRiverTarget(ctx, db, cfg)
	case SystemRiverAudited:
		return newRiverAuditedTarget(ctx, db, cfg)
	}
	return newLedgerTarget(ctx, db, cfg)
}

// burndown inserts N requests, then starts the workers and times how long
// they take until every request is final.
func burndown(ctx context.Context, cfg Config, t target, s *Summary) error {
	began := time.Now()
	if err := preload(ctx, t, cfg.N, cfg.Submitters); err != nil {
		return fmt.Errorf("bench: %s: insert: %w", t.name(), err)
	}
	s.Requests, s.InsertSeconds = int64(cfg.N), time.Since(began).Seconds()
	fmt.Fprintf(cfg.Progress, "%s: %d requests inserted in %.2fs; starting %d workers\n", t.name(), cfg.N, s.InsertSeconds, cfg.Workers)

	began = time.Now()
	stop, exited, err := t.start(ctx)
	if err != nil {
		return err
	}
	m := newMonitor(t, cfg, began, exited, func() int64 { return int64(cfg.N) })
	done, err := m.until(ctx, time.Time{})
	if err := errors.Join(err, stopWorkers(ctx, stop)); err != nil {
		return err
	}
	s.Completed, s.Seconds = int64(cfg.N), done.Sub(began).Seconds()
	s.PerSecond = rate(s.Completed, s.Seconds)
	return nil
}

// continuous runs the submitters and the workers together for the
// duration, then stops submitting and lets the workers finish the backlog.
// Throughput counts what was final when the window closed.
func continuous(ctx context.Context, cfg Config, t target, s *Summary) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	stop, exited, err := t.start(runCtx)
	if err != nil {
		return err
	}
	submitted, stopSubmitters := submitters(runCtx, cancel, t, cfg.Submitters, cfg.Rate)
	m := newMonitor(t, cfg, began, exited, submitted.Load)
	windowEnd, merr := m.until(runCtx, began.Add(cfg.Duration))
	if err := errors.Join(stopSubmitters(), merr); err != nil {
		return errors.Join(err, stopWorkers(ctx, stop))
	}
	s.Requests, s.Completed = submitted.Load(), m.completed
	s.Seconds = windowEnd.Sub(began).Seconds()
	s.InsertSeconds, s.PerSecond = s.Seconds, rate(s.Completed, s.Seconds)
	fmt.Fprintf(cfg.Progress, "  window closed: %d submitted, %d completed; draining the backlog\n", s.Requests, s.Completed)

	drainFrom := time.Now()
	done, err := m.until(runCtx, time.Time{})
	if err := errors.Join(err, stopWorkers(ctx, stop)); err != nil {
		return err
	}
	s.DrainSeconds = done.Sub(drainFrom).Seconds()
	return nil
}

// submitters starts n goroutines that submit one request after another
// until stop is called, which waits for them and returns the first error.
// An error cancels the run at once. With a rate, request k waits until
// k/rate after the start: an offered load that does not slow down when the
// system does (submitters that fall behind the schedule catch up at once).
func submitters(ctx context.Context, cancel context.CancelFunc, t target, n int, perSecond float64) (*atomic.Int64, func() error) {
	var submitted, next atomic.Int64
	var stopping atomic.Bool
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		err := fanOut(ctx, n, func(ctx context.Context) error {
			for !stopping.Load() {
				k := next.Add(1) - 1
				if perSecond > 0 {
					due := start.Add(time.Duration(float64(k) / perSecond * float64(time.Second)))
					if wait := time.Until(due); wait > 0 {
						select {
						case <-time.After(wait):
						case <-ctx.Done():
							return nil
						}
					}
					if stopping.Load() {
						return nil
					}
				}
				if err := t.submit(ctx, int(k)); err != nil {
					return fmt.Errorf("bench: %s: submit: %w", t.name(), err)
				}
				submitted.Add(1)
			}
			return nil
		})
		if err != nil {
			cancel()
		}
		done <- err
	}()
	return &submitted, func() error {
		stopping.Store(true)
		return <-done
	}
}

// preload inserts n requests from conns goroutines, preloadBatch per
// transaction.
func preload(ctx context.Context, t target, n, conns int) error {
	var next atomic.Int64
	return fanOut(ctx, conns, func(ctx context.Context) error {
		for {
			first := int(next.Add(preloadBatch)) - preloadBatch
			if first >= n {
				return nil
			}
			if err := t.insertBatch(ctx, first, min(preloadBatch, n-first)); err != nil {
				return err
			}
		}
	})
}

// stopWorkers stops a target's workers, waiting at most a minute.
func stopWorkers(ctx context.Context, stop func(context.Context) error) error {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return stop(stopCtx)
}

// fanOut runs f on n goroutines and returns the first error; the first
// error cancels the others' context.
func fanOut(ctx context.Context, n int, f func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range n {
		wg.Go(func() {
			if err := f(ctx); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	return first
}
