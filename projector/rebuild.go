package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/ledger"
)

// Progress is where a rebuild stands, reported after each step.
type Progress struct {
	Name     string
	Resumed  bool  // it continues a rebuild an earlier run left
	Position int64 // the shadow tables' cursor
	Head     int64 // the log's last position when the step ran
	Passed   int64 // events the rebuild has passed since it began
	// Rate is events passed per second by this run; ETA the time left at
	// that rate (0 when unknown).
	Rate    float64
	ETA     time.Duration
	Swapped bool // the shadow tables are live: the last report
	Rows    int64
}

// RebuildBatch is how many events a rebuild applies per transaction.
const RebuildBatch = 20000

// Rebuild rebuilds a SQL projection from the start of the log into shadow
// tables (schema ledger_rebuild) while its live tables keep serving, and
// then swaps them in atomically. Each step commits the shadow's cursor
// with its rows, so a rebuild that is interrupted (ctx, a crash, kill -9)
// leaves the live tables untouched and the next Rebuild of the same name
// resumes it. progress, if not nil, is called after each step. db must be
// a ledger_admin login (or the schema's owner).
func Rebuild(ctx context.Context, db ledger.DBTX, name string, batch int, progress func(Progress)) error {
	if batch <= 0 {
		batch = RebuildBatch
	}
	var how string
	if err := db.QueryRow(ctx, `SELECT ledger.projection_rebuild_begin($1)`, name).Scan(&how); err != nil {
		return rebuildError(name, "begin", err)
	}
	p := Progress{Name: name, Resumed: how == "resumed"}
	start := time.Now()
	var first int64 = -1 // events passed before this run's first step
	if !p.Resumed {
		first = 0
	}
	for {
		var tx string
		var caughtUp bool
		err := db.QueryRow(ctx, `SELECT tx_id, "position", applied, head, caught_up FROM ledger.projection_rebuild_step($1, $2)`,
			name, batch).Scan(&tx, &p.Position, &p.Passed, &p.Head, &caughtUp)
		if err != nil {
			return rebuildError(name, "step", err)
		}
		if first < 0 {
			first = p.Passed
		}
		if secs := time.Since(start).Seconds(); secs > 0 && p.Passed > first {
			p.Rate = float64(p.Passed-first) / secs
			if left := p.Head - p.Position; left > 0 {
				p.ETA = time.Duration(float64(left) / p.Rate * float64(time.Second))
			} else {
				p.ETA = 0
			}
		}
		if caughtUp {
			break
		}
		if progress != nil {
			progress(p)
		}
	}
	var tx string
	if err := db.QueryRow(ctx, `SELECT tx_id, "position", rows_copied FROM ledger.projection_rebuild_swap($1)`, name).
		Scan(&tx, &p.Position, &p.Rows); err != nil {
		return rebuildError(name, "swap", err)
	}
	p.Swapped, p.ETA = true, 0
	if progress != nil {
		progress(p)
	}
	return nil
}

// AbortRebuild drops the shadow tables of a rebuild in progress; false when
// there was none.
func AbortRebuild(ctx context.Context, db ledger.DBTX, name string) (bool, error) {
	var dropped bool
	if err := db.QueryRow(ctx, `SELECT ledger.projection_rebuild_abort($1)`, name).Scan(&dropped); err != nil {
		return false, rebuildError(name, "abort", err)
	}
	return dropped, nil
}

func rebuildError(name, step string, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "P0002":
		return fmt.Errorf("%w: %s", ErrUnknownProjection, name)
	case errors.As(err, &pgErr) && pgErr.Code == "0A000":
		// projection_rebuild_begin refuses the Merkle log.
		return fmt.Errorf("%w: %s", ErrMerkleLog, name)
	}
	return fmt.Errorf("projector: rebuild %s (%s): %w", name, step, err)
}

// TableCheck is Verify's finding for one table of a projection.
type TableCheck struct {
	Projection string `json:"projection"`
	Table      string `json:"table"`
	LiveRows   int64  `json:"live_rows"`
	// RebuiltRows and RebuiltDigest are those of the tables rebuilt from
	// the log; digests are MD5 over every row's text, in key order.
	RebuiltRows   int64  `json:"rebuilt_rows"`
	LiveDigest    string `json:"live_digest"`
	RebuiltDigest string `json:"rebuilt_digest"`
	// FirstDifference names the first row, in primary key order, that
	// differs; "" when the tables are identical.
	FirstDifference string `json:"first_difference,omitempty"`
	// Skipped says why the table was not compared (the Merkle log's);
	// its other fields are then zero.
	Skipped string `json:"skipped,omitempty"`
}

// OK reports whether the live table equals its rebuild.
func (c TableCheck) OK() bool {
	return c.FirstDifference == "" && c.LiveRows == c.RebuiltRows && c.LiveDigest == c.RebuiltDigest
}

// Verifier is what Verify needs: a pool or a connection.
type Verifier interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
	ledger.DBTX
}

// Verify rebuilds each named SQL projection (all of them when names is
// empty) from the log into scratch tables and compares every row with its
// live tables, each projection in one REPEATABLE READ transaction so that
// the log and the tables are read at the same moment. Nothing is written.
// The Merkle log is not rebuilt from the events: with no names its tables
// are listed as Skipped, and naming it is ErrMerkleLog.
func Verify(ctx context.Context, db Verifier, names ...string) ([]TableCheck, error) {
	targets, err := verifyTargets(ctx, db, names)
	if err != nil {
		return nil, err
	}
	var out []TableCheck
	for _, p := range targets {
		if p.mode == modeSealer {
			if len(names) > 0 {
				return out, fmt.Errorf("%w: %s", ErrMerkleLog, p.name)
			}
			for _, t := range p.tables {
				out = append(out, TableCheck{Projection: p.name, Table: t, Skipped: MerkleLogSkipped})
			}
			continue
		}
		checks, err := verifyOne(ctx, db, p.name)
		if err != nil {
			return out, err
		}
		out = append(out, checks...)
	}
	return out, nil
}

// MerkleLogSkipped is why Verify does not compare the Merkle log's tables.
const MerkleLogSkipped = "the Merkle log is not rebuilt from the events (signed checkpoints commit to its leaves); execledger verify --db checks it from the first leaf"

// modeSealer is ledger.projections.mode of the Merkle log (migration 011).
const modeSealer = "sealer"

// verifyTarget is a projection Verify visits.
type verifyTarget struct {
	name, mode string
	tables     []string
}

// verifyTargets are the projections named, in their order (one that does
// not exist is left to projection_verify to refuse), or, with no names,
// every projection with tables, by name.
func verifyTargets(ctx context.Context, db ledger.DBTX, names []string) ([]verifyTarget, error) {
	var arg []string
	if len(names) > 0 {
		arg = names
	}
	rows, err := db.Query(ctx, queryVerifyTargets, arg)
	if err != nil {
		return nil, fmt.Errorf("projector: verify: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (verifyTarget, error) {
		var p verifyTarget
		err := row.Scan(&p.name, &p.mode, &p.tables)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("projector: verify: %w", err)
	}
	if len(names) == 0 {
		return found, nil
	}
	out := make([]verifyTarget, 0, len(names))
	for _, name := range names {
		p := verifyTarget{name: name}
		for _, f := range found {
			if f.name == name {
				p = f
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func verifyOne(ctx context.Context, db Verifier, name string) ([]TableCheck, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("projector: verify %s: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, `SELECT table_name, live_rows, rebuilt_rows, live_digest, rebuilt_digest, first_difference
FROM ledger.projection_verify($1)`, name)
	if err != nil {
		return nil, verifyError(name, err)
	}
	checks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableCheck, error) {
		c := TableCheck{Projection: name}
		var diff *string
		err := row.Scan(&c.Table, &c.LiveRows, &c.RebuiltRows, &c.LiveDigest, &c.RebuiltDigest, &diff)
		if diff != nil {
			c.FirstDifference = *diff
		}
		return c, err
	})
	if err != nil {
		return nil, verifyError(name, err)
	}
	return checks, nil
}

func verifyError(name string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "P0002" {
		return fmt.Errorf("%w: %s", ErrUnknownProjection, name)
	}
	return fmt.Errorf("projector: verify %s: %w", name, err)
}
