package console

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/bundle"
)

// section is one part of a page: its rows, or why the login may not see
// them. A page shows what the login may read and says what it may not.
type section[T any] struct {
	Rows []T
	Note string
}

// load fills a section from a query, turning a permission error into a
// note; any other error is returned.
func load[T any](ctx context.Context, sess *session, what, q string, scan func(pgx.CollectableRow) (T, error), args ...any) (section[T], error) {
	rows, err := sess.read.Query(ctx, q, args...)
	if err == nil {
		var out []T
		out, err = pgx.CollectRows(rows, scan)
		if err == nil {
			return section[T]{Rows: out}, nil
		}
	}
	if isPermission(err) {
		return section[T]{Note: fmt.Sprintf("Login %s may not read %s.", sess.login, what)}, nil
	}
	return section[T]{}, fmt.Errorf("%s: %w", what, err)
}

type projectionRow struct {
	Name, State, Mode string
	Position, Applied int64
	Lag               *int64
	LastError         *string
	FailedType        *string
	UpdatedAt         time.Time
}

type queueRow struct {
	State  string
	Count  int64
	Oldest *time.Time
}

type executorRow struct {
	Label  string
	Claims int64
	Lease  *time.Time
}

type healthData struct {
	Projections section[projectionRow]
	Queue       section[queueRow]
	Executors   section[executorRow]
}

const (
	queryProjections = `SELECT p.name, p.state, p.mode, p.position, p.applied_total,
       (SELECT max(e.position) FROM ledger.events e) - p.position, p.last_error, p.failed_type, p.updated_at
FROM ledger.projections p ORDER BY p.name`
	queryProjectionsNoLog = `SELECT name, state, mode, position, applied_total, NULL::bigint, last_error, failed_type, updated_at
FROM ledger.projections ORDER BY name`
	queryQueue     = `SELECT state, count(*), min(available_at) FROM ledger.queue GROUP BY state ORDER BY state`
	queryExecutors = `SELECT claimed_by, count(*), max(lease_expires_at) FROM ledger.queue
WHERE claimed_by IS NOT NULL GROUP BY claimed_by ORDER BY claimed_by`
)

func (s *Server) healthPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx := r.Context()
	var d healthData
	var err error
	q := queryProjectionsNoLog
	if sess.readsLog() {
		q = queryProjections
	}
	if d.Projections, err = load(ctx, sess, "the projections", q, func(row pgx.CollectableRow) (projectionRow, error) {
		var p projectionRow
		err := row.Scan(&p.Name, &p.State, &p.Mode, &p.Position, &p.Applied, &p.Lag, &p.LastError, &p.FailedType, &p.UpdatedAt)
		return p, err
	}); err == nil {
		d.Queue, err = load(ctx, sess, "the queue", queryQueue, func(row pgx.CollectableRow) (queueRow, error) {
			var q queueRow
			err := row.Scan(&q.State, &q.Count, &q.Oldest)
			return q, err
		})
	}
	if err == nil {
		d.Executors, err = load(ctx, sess, "the queue's claims", queryExecutors, func(row pgx.CollectableRow) (executorRow, error) {
			var x executorRow
			err := row.Scan(&x.Label, &x.Claims, &x.Lease)
			return x, err
		})
	}
	if err != nil {
		s.dbFail(w, sess, "health", err)
		return
	}
	s.render(w, http.StatusOK, "health", s.page(sess, "Health", "health", d))
}

type quotaRow struct {
	Principal                                       string
	Requested, Allowed, Denied, Exhausted, Finished int64
	Failed, Fuel, CPU, Wall                         int64
	UpdatedAt                                       time.Time
}

type runQuotaRow struct {
	Principal, RunID      string
	Limit                 *int32
	Used                  int32
	Allowed, Denied, Fuel int64
	CPU, Wall             int64
	Ended                 *time.Time
}

type denialRow struct {
	Principal, RunID, Reason string
	Denied                   int64
}

type bucketRow struct {
	Start           time.Time
	Allowed, Denied int64
	Fuel, CPU, Wall int64
}

// denialBucketRow is one hour's denials of one reason.
type denialBucketRow struct {
	Start  time.Time
	Reason string
	Denied int64
}

type quotasData struct {
	Principal     string
	Usage         section[quotaRow]
	Runs          section[runQuotaRow]
	Denials       section[denialRow]
	Buckets       section[bucketRow]
	Charts        []chart
	DenialBuckets section[denialBucketRow]
	DenialChart   *stackedChart
}

const (
	queryQuotaUsage = `SELECT principal, calls_requested, calls_allowed, calls_denied, budget_exhausted, calls_finished,
       calls_failed, fuel, cpu_ms, wall_ms, updated_at
FROM ledger.quota_usage WHERE ($1 = '' OR principal = $1) ORDER BY calls_requested DESC, principal LIMIT 100`
	queryQuotaRuns = `SELECT principal, run_id, budget_limit, budget_used, calls_allowed, calls_denied, fuel, cpu_ms, wall_ms, ended_at
FROM ledger.quota_usage_runs WHERE ($1 = '' OR principal = $1) ORDER BY updated_at DESC LIMIT 50`
	queryQuotaDenials = `SELECT principal, run_id, reason, denied FROM ledger.quota_denials
WHERE ($1 = '' OR principal = $1) ORDER BY denied DESC, principal, run_id, reason LIMIT 50`
	// queryQuotaBuckets sums the hourly buckets of the last two days.
	queryQuotaBuckets = `SELECT bucket_start, sum(calls_allowed)::bigint, sum(calls_denied)::bigint, sum(fuel)::bigint,
       sum(cpu_ms)::bigint, sum(wall_ms)::bigint
FROM ledger.quota_usage_buckets
WHERE bucket = 'hour' AND bucket_start >= $2 AND ($1 = '' OR principal = $1)
GROUP BY bucket_start ORDER BY bucket_start`
	// queryDenialBuckets sums the hourly denials by reason of the last two
	// days (quota_denial_buckets, 023).
	queryDenialBuckets = `SELECT bucket_start, reason, sum(denied)::bigint
FROM ledger.quota_denial_buckets
WHERE bucket = 'hour' AND bucket_start >= $2 AND ($1 = '' OR principal = $1)
GROUP BY bucket_start, reason ORDER BY bucket_start, reason`
)

func (s *Server) quotasPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx := r.Context()
	d := quotasData{Principal: strings.TrimSpace(r.URL.Query().Get("principal"))}
	var err error
	d.Usage, err = load(ctx, sess, "quota usage", queryQuotaUsage, func(row pgx.CollectableRow) (quotaRow, error) {
		var q quotaRow
		err := row.Scan(&q.Principal, &q.Requested, &q.Allowed, &q.Denied, &q.Exhausted, &q.Finished, &q.Failed, &q.Fuel, &q.CPU,
			&q.Wall, &q.UpdatedAt)
		return q, err
	}, d.Principal)
	if err == nil {
		d.Runs, err = load(ctx, sess, "run budgets", queryQuotaRuns, func(row pgx.CollectableRow) (runQuotaRow, error) {
			var q runQuotaRow
			err := row.Scan(&q.Principal, &q.RunID, &q.Limit, &q.Used, &q.Allowed, &q.Denied, &q.Fuel, &q.CPU, &q.Wall, &q.Ended)
			return q, err
		}, d.Principal)
	}
	if err == nil {
		d.Denials, err = load(ctx, sess, "denials", queryQuotaDenials, func(row pgx.CollectableRow) (denialRow, error) {
			var q denialRow
			err := row.Scan(&q.Principal, &q.RunID, &q.Reason, &q.Denied)
			return q, err
		}, d.Principal)
	}
	if err == nil {
		since := s.opts.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)
		d.Buckets, err = load(ctx, sess, "usage over time", queryQuotaBuckets, func(row pgx.CollectableRow) (bucketRow, error) {
			var b bucketRow
			err := row.Scan(&b.Start, &b.Allowed, &b.Denied, &b.Fuel, &b.CPU, &b.Wall)
			return b, err
		}, d.Principal, since)
		d.Charts = quotaCharts(d.Buckets.Rows, since, 49)
		if err == nil {
			d.DenialBuckets, err = load(ctx, sess, "denials by reason over time", queryDenialBuckets, func(row pgx.CollectableRow) (denialBucketRow, error) {
				var b denialBucketRow
				err := row.Scan(&b.Start, &b.Reason, &b.Denied)
				return b, err
			}, d.Principal, since)
			d.DenialChart = denialChart(d.DenialBuckets.Rows, since, 49)
		}
	}
	if err != nil {
		s.dbFail(w, sess, "quotas", err)
		return
	}
	s.render(w, http.StatusOK, "quotas", s.page(sess, "Quotas", "quotas", d))
}

type skillRow struct {
	ID, Status                 string
	Version, Publisher, Digest *string
	InstalledBy                *string
	Approvals                  []string
	FailedChecks               []byte
	UpdatedAt                  time.Time
}

type trustKeyRow struct {
	KeyID, Publisher, Source, AddedBy string
	AddedAt                           time.Time
	RevokedAt                         *time.Time
	RevokeReason                      *string
}

type skillsData struct {
	Skills  section[skillRow]
	Trust   section[trustKeyRow]
	IsAdmin bool // ledger_skill_admin: the lifecycle's forms are shown
	Flash   string
	Error   string
}

const (
	querySkills = `SELECT skill_id, status, version, publisher, artifact_digest, installed_by, approvals, failed_checks, updated_at
FROM ledger.skill_status ORDER BY skill_id`
	queryTrustKeys = `SELECT key_id, publisher, source, added_by, added_at, revoked_at, revoke_reason
FROM ledger.skill_trust_keys ORDER BY publisher, added_at`
)

func (s *Server) skillsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderSkills(w, r, sess, http.StatusOK, skillsData{})
}

func (s *Server) renderSkills(w http.ResponseWriter, r *http.Request, sess *session, status int, d skillsData) {
	ctx := r.Context()
	d.IsAdmin = sess.has("ledger_skill_admin")
	var err error
	d.Skills, err = load(ctx, sess, "skill status", querySkills, func(row pgx.CollectableRow) (skillRow, error) {
		var k skillRow
		var checks []byte
		err := row.Scan(&k.ID, &k.Status, &k.Version, &k.Publisher, &k.Digest, &k.InstalledBy, &k.Approvals, &checks, &k.UpdatedAt)
		k.FailedChecks = []byte(prettyJSON(checks))
		return k, err
	})
	if err == nil {
		d.Trust, err = load(ctx, sess, "the trust store", queryTrustKeys, func(row pgx.CollectableRow) (trustKeyRow, error) {
			var k trustKeyRow
			err := row.Scan(&k.KeyID, &k.Publisher, &k.Source, &k.AddedBy, &k.AddedAt, &k.RevokedAt, &k.RevokeReason)
			return k, err
		})
	}
	if err != nil {
		s.dbFail(w, sess, "skills", err)
		return
	}
	s.render(w, status, "skills", s.page(sess, "Skills", "skills", d))
}

type checkpointRow struct {
	Size         int64
	Root         string
	Origin       string
	SignedAt     time.Time
	PublishedAt  *time.Time
	Cosignatures int64
	Lag          string // from signing to publication
}

// witnessRow is one witness's cosignatures: its newest and how far it is
// behind the newest checkpoint.
type witnessRow struct {
	KeyName       string
	KeyHash       int64
	NewestSize    int64
	CosignedAt    time.Time // when its newest cosignature was stored
	Behind        int64     // checkpoints signed after its newest (at most maxBehind+1)
	BehindFor     string    // how much older its newest is than the newest checkpoint
	Configured    bool      // one of the console's witness keys
	BehindCapped  bool
	CheckpointsAt int64 // the newest checkpoint's size
}

// maxBehind bounds the count of checkpoints a witness is behind: past
// it the page says "more than".
const maxBehind = 10000

type logData struct {
	Witnesses   section[witnessRow]
	Checkpoints section[checkpointRow]
	Chart       *chart
	KeyName     string
	Report      *bundle.Report
	ReportError string
}

const queryCheckpoints = `SELECT c.size, c.root_hash, c.origin, c.signed_at, c.published_at,
       (SELECT count(*) FROM ledger.checkpoint_cosignatures w WHERE w.size = c.size)
FROM ledger.checkpoints c ORDER BY c.size DESC LIMIT 100`

// queryWitnesses walks the distinct witnesses of
// checkpoint_cosignatures_key_idx (023) one probe at a time and reads
// each one's newest cosignature and how far behind the newest checkpoint
// it is.
const queryWitnesses = `WITH RECURSIVE k AS (
    (SELECT key_name, key_hash FROM ledger.checkpoint_cosignatures ORDER BY key_name, key_hash LIMIT 1)
    UNION ALL
    SELECT n.key_name, n.key_hash FROM k CROSS JOIN LATERAL (
        SELECT c.key_name, c.key_hash FROM ledger.checkpoint_cosignatures c
        WHERE (c.key_name, c.key_hash) > (k.key_name, k.key_hash) ORDER BY c.key_name, c.key_hash LIMIT 1) n
), newest AS (
    SELECT size, signed_at FROM ledger.checkpoints ORDER BY size DESC LIMIT 1
)
SELECT k.key_name, k.key_hash, l.size, l.recorded_at, newest.size,
       (SELECT count(*) FROM (SELECT 1 FROM ledger.checkpoints c WHERE c.size > l.size LIMIT $1) x),
       extract(epoch FROM newest.signed_at - cs.signed_at)::float8
FROM k
CROSS JOIN LATERAL (SELECT c.size, c.recorded_at FROM ledger.checkpoint_cosignatures c
                    WHERE c.key_name = k.key_name AND c.key_hash = k.key_hash ORDER BY c.size DESC LIMIT 1) l
JOIN ledger.checkpoints cs ON cs.size = l.size
CROSS JOIN newest
ORDER BY k.key_name, k.key_hash`

func (s *Server) logPage(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.logData(r.Context(), sess)
	if err != nil {
		s.dbFail(w, sess, "the transparency log", err)
		return
	}
	s.render(w, http.StatusOK, "log", s.page(sess, "Transparency log", "log", d))
}

func (s *Server) logData(ctx context.Context, sess *session) (logData, error) {
	var d logData
	if s.opts.Keys.Log != nil {
		d.KeyName = bundle.Fingerprint(s.opts.Keys.Log)
	}
	var err error
	d.Checkpoints, err = load(ctx, sess, "the checkpoints", queryCheckpoints, func(row pgx.CollectableRow) (checkpointRow, error) {
		var c checkpointRow
		var root []byte
		err := row.Scan(&c.Size, &root, &c.Origin, &c.SignedAt, &c.PublishedAt, &c.Cosignatures)
		c.Root = base64.StdEncoding.EncodeToString(root)
		if c.PublishedAt != nil {
			c.Lag = c.PublishedAt.Sub(c.SignedAt).Round(time.Millisecond).String()
		}
		return c, err
	})
	d.Chart = sizeChart(d.Checkpoints.Rows)
	if err != nil {
		return d, err
	}
	d.Witnesses, err = load(ctx, sess, "the witness cosignatures", queryWitnesses, func(row pgx.CollectableRow) (witnessRow, error) {
		var x witnessRow
		var secs float64
		err := row.Scan(&x.KeyName, &x.KeyHash, &x.NewestSize, &x.CosignedAt, &x.CheckpointsAt, &x.Behind, &secs)
		x.BehindCapped = x.Behind > maxBehind
		x.BehindFor = (time.Duration(secs * float64(time.Second))).Round(time.Millisecond).String()
		for _, v := range s.opts.Keys.Witnesses {
			if v.Name() == x.KeyName && int64(v.KeyHash()) == x.KeyHash {
				x.Configured = true
			}
		}
		return x, err
	}, maxBehind+1)
	return d, err
}

// verifyUpload verifies an uploaded bundle with the configured keys, as
// `execledger verify BUNDLE` does, and names the fault in plain words.
func (s *Server) verifyUpload(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.logData(r.Context(), sess)
	if err != nil {
		s.dbFail(w, sess, "the transparency log", err)
		return
	}
	status := http.StatusOK
	file, _, ferr := r.FormFile("bundle")
	switch {
	case ferr != nil:
		d.ReportError, status = "Choose a bundle file to verify.", http.StatusBadRequest
	case s.opts.Keys.Log == nil || len(s.opts.Keys.Attestation) == 0:
		d.ReportError, status = "The console has no log key or no attestation key configured (console.log_key, console.attest_keys): it cannot verify bundles.", http.StatusConflict
	default:
		defer file.Close()
		keys := bundle.Keys{Log: s.opts.Keys.Log, Attestation: s.opts.Keys.Attestation, Witnesses: s.opts.Keys.Witnesses}
		rep, err := bundle.Verify(r.Context(), file, keys, nil)
		if err != nil {
			d.ReportError, status = "The file could not be read as a bundle: "+err.Error(), http.StatusBadRequest
		} else {
			d.Report = &rep
		}
	}
	s.render(w, status, "log", s.page(sess, "Transparency log", "log", d))
}
