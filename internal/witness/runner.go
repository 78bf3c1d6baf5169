package witness

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/retry"
)

// Retry backoff while the database is unreachable (loop mode).
const (
	RetryFirst = time.Second
	RetryMax   = time.Minute
)

// Runner runs a witness's passes and hands each to Report.
type Runner struct {
	Witness *Witness
	// Connect opens the pool the passes use; Runner calls it again after
	// a failure to connect, and closes the pool when Run returns.
	Connect func(context.Context) (*pgxpool.Pool, error)
	// Report is called with each pass that completed or refused.
	Report func(Pass)
	Logger *slog.Logger
	// Once: one pass, then return; else one every Interval.
	Once     bool
	Interval time.Duration

	pool *pgxpool.Pool
}

// Run runs one pass (Once) or one every Interval until ctx ends or a pass
// refuses. It returns the pass's *Refusal, or the error that ended it: in
// loop mode a transient database failure is retried with backoff, and
// ctx's end is no error.
func (r *Runner) Run(ctx context.Context) error {
	defer func() {
		if r.pool != nil {
			r.pool.Close()
			r.pool = nil
		}
	}()
	backoff := RetryFirst
	for {
		p, err := r.pass(ctx)
		var ref *Refusal
		switch {
		case !r.Once && ctx.Err() != nil:
			return nil
		case errors.As(err, &ref):
			r.Report(p)
			return err
		case err == nil:
			r.Report(p)
			backoff = RetryFirst
			if r.Once || !retry.Sleep(ctx, r.Interval) {
				return nil
			}
			continue
		case r.Once || !transient(err):
			return err
		}
		r.Logger.Warn("witness pass failed; retrying", slog.Any("error", err), slog.Duration("retry_in", backoff))
		if !retry.Sleep(ctx, backoff) {
			return nil
		}
		backoff = min(backoff*2, RetryMax)
	}
}

func (r *Runner) pass(ctx context.Context) (Pass, error) {
	if r.pool == nil {
		pool, err := r.Connect(ctx)
		if err != nil {
			return Pass{}, dbError{err}
		}
		r.pool = pool
	}
	return r.Witness.Pass(ctx, r.pool)
}

// transient reports whether err is a database failure worth retrying: the
// server is unreachable, restarting or overloaded, or a transaction was
// rolled back (contract.Transient), or the failure carries no SQLSTATE at
// all (a broken connection); not one that refuses the witness (privileges,
// a missing checkpoint) and not a failure of the state file or keys.
func transient(err error) bool {
	var d dbError
	return errors.As(err, &d) && (contract.SQLState(err) == "" || contract.Transient(err))
}
