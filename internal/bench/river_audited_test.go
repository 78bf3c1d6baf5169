//go:build river

package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/testdb"
)

// TestRiverAudited: river-audited does what it claims. After a small run
// of each mode (burndown over 3 chains, whose batch inserts span chains;
// continuous over 1 chain, where every transaction waits for the same
// lock), the test's own pass over the kept database finds every job's
// trail inserted → started → completed in unbroken SHA-256 chains with a
// valid Ed25519 signature on each outcome; the table refuses UPDATE,
// DELETE and TRUNCATE; and each kind of tampering a superuser could do
// behind the trigger's back is found.
func TestRiverAudited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   string
		chains int
	}{{ModeBurndown, 3}, {ModeContinuous, 1}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			var progress strings.Builder
			r, err := Run(ctx, Config{AdminURL: testdb.AdminURL(), Mode: tc.mode, System: SystemRiverAudited, N: 200,
				Duration: 2 * time.Second, Submitters: 4, Workers: 16, AuditChains: tc.chains, Keep: true,
				Interval: 500 * time.Millisecond, Stall: 2 * time.Minute, Progress: &progress})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, progress.String())
			}
			s := r.Runs[0]
			db := &Database{Name: s.Database, adminURL: testdb.AdminURL()}
			t.Cleanup(func() {
				if err := db.drop(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
				}
			})
			if err := r.Check(); err != nil {
				t.Fatal(err)
			}
			if a := s.Audit; a.Chains != tc.chains || a.Rows < 3*s.Requests || a.Signatures != s.Requests {
				t.Fatalf("the run's own check: %+v for %d requests", a, s.Requests)
			}
			pool, err := db.pool(ctx, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			public, err := hex.DecodeString(s.Audit.PublicKey)
			if err != nil || len(public) != ed25519.PublicKeySize {
				t.Fatalf("the run's public key %q: %v", s.Audit.PublicKey, err)
			}
			checkAuditLog(ctx, t, pool, public, s.Requests, tc.chains)
		})
	}
}

// checkAuditLog verifies the kept audit log of a run of n jobs, then
// tampers with it in transactions it rolls back.
func checkAuditLog(ctx context.Context, t *testing.T, pool *pgxpool.Pool, public ed25519.PublicKey, n int64, chains int) {
	t.Helper()
	// Three rows a job, and at most a started row more for each attempt
	// River retried (a job that outlived River's job timeout on a loaded
	// machine; an attempt whose started row failed to commit adds none).
	var retries int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(attempt - 1), 0) FROM river_job`).Scan(&retries); err != nil {
		t.Fatal(err)
	}
	a := verifyAuditLog(ctx, pool, public)
	if a.Err() != nil || a.Rows < 3*n || a.Rows > 3*n+retries || a.Jobs != n || a.Signatures != n || a.Chains != chains {
		t.Fatalf("verify: %+v (%v), want %d rows (+ at most %d retries), %d jobs and signatures, %d chains",
			a, a.Err(), 3*n, retries, n, chains)
	}
	// Every chain the jobs map to is used, and each job's rows are in
	// order: the verifier's pass above checked it; here the SQL agrees.
	var usedChains, completedJobs int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT chain), count(*) FILTER (WHERE event = 'completed') FROM river_audit`).
		Scan(&usedChains, &completedJobs); err != nil {
		t.Fatal(err)
	}
	if usedChains != chains || int64(completedJobs) != n {
		t.Errorf("%d chains used of %d, %d completed rows of %d", usedChains, chains, completedJobs, n)
	}
	// Another key does not verify the signatures.
	other, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a := verifyAuditLog(ctx, pool, other); a.Signatures != 0 || a.ProblemCount != int(n) {
		t.Errorf("another key: %+v", a)
	}

	for _, stmt := range []string{
		`UPDATE river_audit SET event = 'started' WHERE event = 'completed'`,
		`DELETE FROM river_audit WHERE seq = 2`,
		`TRUNCATE river_audit`,
		`UPDATE river_audit_settings SET chains = chains + 1`,
	} {
		_, err := pool.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(pgErr.Message, "insert-only") {
			t.Errorf("%s: %v, want refused as insert-only", stmt, err)
		}
	}

	// Tampering as a superuser, with the triggers off; each case in a
	// transaction that is rolled back.
	for name, tc := range map[string]struct {
		stmts []string
		want  string
	}{
		"a row changed": {[]string{
			`UPDATE river_audit SET recorded_at = recorded_at + interval '1 second' WHERE (chain, seq) = (0, 2)`,
		}, "hash does not match the row"},
		"a row deleted": {[]string{
			`DELETE FROM river_audit WHERE (chain, seq) = (0, 2)`,
		}, "follows seq 1"},
		"an outcome forged, its hash recomputed": {[]string{
			`UPDATE river_audit SET output_digest = sha256('forged'::bytea) WHERE (chain, seq) = (SELECT chain, max(seq) FROM river_audit WHERE event = 'completed' GROUP BY chain ORDER BY chain LIMIT 1)`,
			rehashTail,
		}, "bad signature"},
		"a job's args changed": {[]string{
			`UPDATE river_job SET args = '{"text": "bye"}' WHERE id = (SELECT min(id) FROM river_job)`,
		}, "args digest is not that of the job's args"},
		"a trail cut short": {[]string{
			`DELETE FROM river_audit WHERE (chain, seq) = (SELECT chain, max(seq) FROM river_audit GROUP BY chain ORDER BY chain LIMIT 1)`,
		}, "River state completed, last audit event \"started\""},
		"rows appended in a chain for an unsigned outcome": {[]string{
			`INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at)
			 VALUES ('{"text": "x"}', 'execledger_bench_audited_echo', 1, 'default', 'completed', now())`,
			`SELECT river_audit_append(ARRAY[(SELECT max(id) FROM river_job)], e) FROM unnest(ARRAY['inserted', 'started']) e`,
			`SELECT river_audit_append(ARRAY[(SELECT max(id) FROM river_job)], 'completed', ARRAY[sha256('x'::bytea)], ARRAY[sha256('x'::bytea) || sha256('y'::bytea)])`,
		}, "bad signature"},
		"a job in the wrong chain": {[]string{
			`UPDATE river_audit_settings SET chains = chains + 1`,
		}, "job in the wrong chain"},
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, stmt := range append([]string{`ALTER TABLE river_audit DISABLE TRIGGER USER`,
				`ALTER TABLE river_audit_settings DISABLE TRIGGER USER`}, tc.stmts...) {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					t.Errorf("%s: %s: %v", name, stmt, err)
				}
			}
			a := verifyAuditLog(ctx, tx, public)
			if a.Err() == nil || !strings.Contains(a.Err().Error(), tc.want) {
				t.Errorf("%s: %+v, want a problem %q", name, a, tc.want)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if a := verifyAuditLog(ctx, pool, public); a.Err() != nil {
		t.Errorf("after the rollbacks: %v", a.Err())
	}
}

var errRollback = errors.New("rolled back")

// rehashTail recomputes, the way river_audit_append does, the hashes of
// every chain from its first row on: what a forger who knows the scheme
// would do to hide a change.
const rehashTail = `DO $$
DECLARE r record; v_prev bytea; v_chain integer := -1; v_hash bytea;
BEGIN
    FOR r IN SELECT * FROM river_audit ORDER BY chain, seq LOOP
        IF r.chain <> v_chain THEN v_chain := r.chain; v_prev := decode(repeat('00', 32), 'hex'); END IF;
        v_hash := sha256(v_prev || convert_to(format('%s|%s|%s|%s|%s|%s|%s|%s', r.chain, r.seq, r.job_id, r.event,
            encode(r.args_digest, 'hex'), coalesce(encode(r.output_digest, 'hex'), ''),
            coalesce(encode(r.signature, 'hex'), ''), (extract(epoch FROM r.recorded_at) * 1000000)::bigint), 'UTF8'));
        UPDATE river_audit SET prev_hash = v_prev, hash = v_hash WHERE chain = r.chain AND seq = r.seq;
        v_prev := v_hash;
    END LOOP;
END $$`
