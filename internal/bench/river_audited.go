//go:build river

package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Audit events: the state changes of a job river-audited records.
const (
	auditInserted  = "inserted"
	auditStarted   = "started"
	auditCompleted = "completed"
)

// echoArgs is river-audited's job: the same text as the echo requests.
type echoArgs struct {
	Text string `json:"text"`
}

func (echoArgs) Kind() string { return "execledger_bench_audited_echo" }

// auditedWorker does the echo work of the River baseline (the output is
// the input's text) and writes an audit trail of it: a row when it
// starts, and, in the transaction that completes the job, a row carrying
// an Ed25519 signature over the job's outcome.
type auditedWorker struct {
	river.WorkerDefaults[echoArgs]
	pool *pgxpool.Pool
	key  ed25519.PrivateKey
}

func (w *auditedWorker) Work(ctx context.Context, job *river.Job[echoArgs]) error {
	// River marks a job running in the transaction that fetches it, which
	// a worker cannot join: "started" is a transaction of its own.
	if _, err := w.pool.Exec(ctx, queryAuditAppend, []int64{job.ID}, auditStarted, nil, nil); err != nil {
		return fmt.Errorf("audit started: %w", err)
	}
	output, err := json.Marshal(echoArgs{Text: job.Args.Text})
	if err != nil {
		return err
	}
	argsDigest := sha256.Sum256(job.EncodedArgs)
	outputDigest := sha256.Sum256(output)
	sig := ed25519.Sign(w.key, outcomeStatement(job.ID, argsDigest[:], auditCompleted, outputDigest[:]))
	// The completion and its audit row commit together (River's
	// JobCompleteTx); the audit row last, so that the chain's lock is held
	// for the commit alone.
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		if _, err := tx.Exec(ctx, queryAuditAppend, []int64{job.ID}, auditCompleted,
			[][]byte{outputDigest[:]}, [][]byte{sig}); err != nil {
			return fmt.Errorf("audit completed: %w", err)
		}
		return nil
	})
}

// outcomeStatement is what river-audited signs for a job: its id, the
// SHA-256 of its args as stored, its outcome and the SHA-256 of its output.
func outcomeStatement(jobID int64, argsDigest []byte, outcome string, outputDigest []byte) []byte {
	return fmt.Appendf(nil, "execledger bench river-audited outcome v1\njob %d\nargs sha256:%x\noutcome %s\noutput sha256:%x\n",
		jobID, argsDigest, outcome, outputDigest)
}

// riverAuditedTarget is River with auditedWorker: each job's inserting
// transaction also appends its "inserted" row.
type riverAuditedTarget struct {
	*riverTarget
	public ed25519.PublicKey
}

var _ target = (*riverAuditedTarget)(nil)

// newRiverAuditedTarget sets River up as newRiverTarget does, with the
// audited worker, a fresh Ed25519 key and the audit schema.
func newRiverAuditedTarget(ctx context.Context, db *Database, cfg Config) (target, error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	rt, err := openRiver(ctx, db, cfg, SystemRiverAudited, func(workers *river.Workers, pool *pgxpool.Pool) {
		river.AddWorker(workers, &auditedWorker{pool: pool, key: private})
	})
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, rt.workPool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, queryAuditSchema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, queryAuditSettings, cfg.AuditChains)
		return err
	})
	if err != nil {
		rt.close()
		return nil, fmt.Errorf("bench: create the audit table: %w", err)
	}
	return &riverAuditedTarget{riverTarget: rt, public: public}, nil
}

func (t *riverAuditedTarget) insertBatch(ctx context.Context, _, n int) error {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: echoArgs{Text: "hello"}}
	}
	return pgx.BeginFunc(ctx, t.submitPool, func(tx pgx.Tx) error {
		res, err := t.inserter.InsertManyTx(ctx, tx, params)
		if err != nil {
			return err
		}
		ids := make([]int64, len(res))
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		return t.auditInserted(ctx, tx, ids)
	})
}

func (t *riverAuditedTarget) submit(ctx context.Context, _ int) error {
	return pgx.BeginFunc(ctx, t.submitPool, func(tx pgx.Tx) error {
		res, err := t.inserter.InsertTx(ctx, tx, echoArgs{Text: "hello"}, nil)
		if err != nil {
			return err
		}
		return t.auditInserted(ctx, tx, []int64{res.Job.ID})
	})
}

func (t *riverAuditedTarget) auditInserted(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if _, err := tx.Exec(ctx, queryAuditAppend, ids, auditInserted, nil, nil); err != nil {
		return fmt.Errorf("audit inserted: %w", err)
	}
	return nil
}

// summarize adds to River's figures the audit rows per job and the
// verification of the whole audit log (after the timed part of the run).
func (t *riverAuditedTarget) summarize(ctx context.Context, s *Summary) error {
	if err := t.riverTarget.summarize(ctx, s); err != nil {
		return err
	}
	var rows int64
	if err := t.workPool.QueryRow(ctx, queryAuditCount).Scan(&rows); err != nil {
		return fmt.Errorf("bench: count audit rows: %w", err)
	}
	if s.Requests > 0 {
		s.AuditRowsPerRequest = float64(rows) / float64(s.Requests)
	}
	s.Audit = verifyAuditLog(ctx, t.workPool, t.public)
	return nil
}
