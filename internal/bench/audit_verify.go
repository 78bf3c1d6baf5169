//go:build river

package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// queryer is a pool, a connection or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// auditRow is one row of river_audit.
type auditRow struct {
	chain                               int32
	seq, jobID                          int64
	event                               string
	argsDigest, outputDigest, signature []byte
	recordedAt                          time.Time
	prevHash, hash                      []byte
}

// auditRowHash is river_audit_append's hash of a row (queryAuditSchema):
// sha256(prev_hash || chain|seq|job_id|event|args|output|signature|µs).
func auditRowHash(r *auditRow) []byte {
	h := sha256.New()
	h.Write(r.prevHash)
	fmt.Fprintf(h, "%d|%d|%d|%s|%x|%x|%x|%d", r.chain, r.seq, r.jobID, r.event, r.argsDigest, r.outputDigest,
		r.signature, r.recordedAt.UnixMicro())
	return h.Sum(nil)
}

// auditJob is what the verifier knows of a job: its row in river_job and
// how far its audit trail got.
type auditJob struct {
	state      string
	argsDigest []byte
	last       string // the last audit event seen, "" before any
}

// auditVerifier checks river_audit row by row, in chain order.
type auditVerifier struct {
	public ed25519.PublicKey
	chains int
	jobs   map[int64]*auditJob
	check  *AuditCheck
	// The chain being read: its number and the last row's seq and hash.
	chain    int32
	seq      int64
	prevHash []byte
}

// maxAuditProblems is how many problems an AuditCheck spells out.
const maxAuditProblems = 10

// verifyAuditLog checks river-audited's audit log against river_job: each
// chain unbroken (seq 1, 2, …; each row's prev_hash the hash of the row
// before, 32 zero bytes for the first; each hash recomputed from the
// row); each row in its job's chain and carrying the digest of the job's
// args as stored; each job's trail inserted, started (once per attempt),
// completed, in that order; each completed row's Ed25519 signature valid
// for public over outcomeStatement; and every job River completed, and
// none other, completed in the audit log. A failure to read is a problem
// too: the check is never silently empty.
func verifyAuditLog(ctx context.Context, db queryer, public ed25519.PublicKey) *AuditCheck {
	v := &auditVerifier{public: public, jobs: map[int64]*auditJob{}, check: &AuditCheck{PublicKey: hex.EncodeToString(public)}, chain: -1}
	if err := v.read(ctx, db); err != nil {
		v.problem("read: %v", err)
	}
	for id, j := range v.jobs {
		if (j.state == "completed") != (j.last == auditCompleted) {
			v.problem("job %d: River state %s, last audit event %q", id, j.state, j.last)
		}
	}
	return v.check
}

func (v *auditVerifier) read(ctx context.Context, db queryer) error {
	if err := db.QueryRow(ctx, queryAuditChains).Scan(&v.chains); err != nil {
		return err
	}
	v.check.Chains = v.chains
	rows, err := db.Query(ctx, queryAuditJobs)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		j := &auditJob{}
		if err := rows.Scan(&id, &j.state, &j.argsDigest); err != nil {
			rows.Close()
			return err
		}
		v.jobs[id] = j
	}
	if err := rows.Err(); err != nil {
		return err
	}
	v.check.Jobs = int64(len(v.jobs))
	rows, err = db.Query(ctx, queryAuditRows)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.chain, &r.seq, &r.jobID, &r.event, &r.argsDigest, &r.outputDigest, &r.signature,
			&r.recordedAt, &r.prevHash, &r.hash); err != nil {
			return err
		}
		v.row(&r)
	}
	return rows.Err()
}

// row checks one row, the rows before it in its chain checked already.
func (v *auditVerifier) row(r *auditRow) {
	v.check.Rows++
	if r.chain != v.chain {
		v.chain, v.seq, v.prevHash = r.chain, 0, make([]byte, sha256.Size)
	}
	at := fmt.Sprintf("chain %d seq %d (job %d, %s)", r.chain, r.seq, r.jobID, r.event)
	if r.seq != v.seq+1 {
		v.problem("%s: follows seq %d", at, v.seq)
	}
	if !bytes.Equal(r.prevHash, v.prevHash) {
		v.problem("%s: prev_hash is not the hash of the row before", at)
	}
	if !bytes.Equal(r.hash, auditRowHash(r)) {
		v.problem("%s: hash does not match the row", at)
	}
	v.seq, v.prevHash = r.seq, r.hash
	if v.chains > 0 && int64(r.chain) != r.jobID%int64(v.chains) {
		v.problem("%s: job in the wrong chain", at)
	}
	j := v.jobs[r.jobID]
	if j == nil {
		v.problem("%s: no such job in river_job", at)
		return
	}
	if !bytes.Equal(r.argsDigest, j.argsDigest) {
		v.problem("%s: args digest is not that of the job's args", at)
	}
	if !auditFollows(j.last, r.event) {
		v.problem("%s: follows %q", at, j.last)
	}
	j.last = r.event
	if r.event == auditCompleted {
		statement := outcomeStatement(r.jobID, r.argsDigest, auditCompleted, r.outputDigest)
		if len(r.signature) != ed25519.SignatureSize || !ed25519.Verify(v.public, statement, r.signature) {
			v.problem("%s: bad signature", at)
		} else {
			v.check.Signatures++
		}
	}
}

// auditFollows reports whether a job's audit event may follow the last:
// inserted first, then started (again after a failed attempt), then
// completed, nothing after it.
func auditFollows(last, event string) bool {
	switch event {
	case auditInserted:
		return last == ""
	case auditStarted:
		return last == auditInserted || last == auditStarted
	case auditCompleted:
		return last == auditStarted
	}
	return false
}

func (v *auditVerifier) problem(format string, args ...any) {
	v.check.ProblemCount++
	if len(v.check.Problems) < maxAuditProblems {
		v.check.Problems = append(v.check.Problems, fmt.Sprintf(format, args...))
	}
}
