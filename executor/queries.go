package executor

// The executor's SQL. Events go through ledger.Store (ledger.append_events);
// the rows derived from them are written here, in the same transactions.
const (
	queryClaim = `SELECT id, claim_id, attempt, stream_version, principal, tool, coalesce(run_id, ''), input, context,
       input_digest, approved, charged, submitted_at
FROM ledger.claim_requests($1, $2, $3::interval)`

	// queryCreateBudgets adds the missing budget rows of the given runs;
	// queryLockBudgets then locks them all, in (principal, run_id) order.
	// (Two statements: rows a CTE inserts are invisible to its own query.)
	queryCreateBudgets = `INSERT INTO ledger.runs (principal, run_id)
SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (principal, run_id) DO NOTHING`

	queryLockBudgets = `SELECT r.principal, r.run_id, coalesce(r.max_calls, $3), r.used, r.ended_at IS NOT NULL
FROM ledger.runs r JOIN unnest($1::text[], $2::text[]) AS k(principal, run_id) USING (principal, run_id)
ORDER BY r.principal, r.run_id
FOR UPDATE OF r`

	queryChargeBudgets = `UPDATE ledger.runs r SET used = r.used + c.n
FROM (SELECT principal, run_id, count(*) AS n FROM unnest($1::text[], $2::text[]) AS u(principal, run_id) GROUP BY 1, 2) c
WHERE r.principal = c.principal AND r.run_id = c.run_id`

	// queryStartJobs marks authorized jobs as running: their execution
	// may begin as soon as the transaction commits.
	queryStartJobs = `WITH j AS (
    SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::boolean[]) AS u(id, version, charge)
), q AS (
    UPDATE ledger.queue q SET stream_version = j.version, started_at = clock_timestamp(),
        charged = q.charged OR j.charge
    FROM j WHERE q.id = j.id
)
UPDATE ledger.request_status r SET state = 'running'
FROM j WHERE r.id = j.id`

	queryAwaitApproval = `WITH j AS (
    SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS u(id, version)
), q AS (
    UPDATE ledger.queue q SET state = 'awaiting_approval', stream_version = j.version, claim_id = NULL,
        claimed_by = NULL, lease_expires_at = NULL, approval_expires_at = clock_timestamp() + $3::interval
    FROM j WHERE q.id = j.id
)
UPDATE ledger.request_status r SET state = 'awaiting_approval'
FROM j WHERE r.id = j.id`

	// queryFinish ends requests: the read model takes the outcome, the
	// queue row goes, and waiters are told.
	queryFinish = `WITH f AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
        AS u(id, state, error_kind, error, output, tier, attestation_digest)
), q AS (
    DELETE FROM ledger.queue q USING f WHERE q.id = f.id
), r AS (
    UPDATE ledger.request_status r
    SET state = f.state, error_kind = f.error_kind, error = f.error, output = f.output::jsonb,
        tier = f.tier, attestation_digest = f.attestation_digest, finished_at = clock_timestamp()
    FROM f WHERE r.id = f.id
)
SELECT count(pg_notify('ledger_request_done', f.id::text)) FROM f`

	// queryLockClaims locks the queue rows of jobs whose claims are still
	// theirs; a row rescued or cancelled-and-finished meanwhile is skipped.
	queryLockClaims = `SELECT q.id, q.stream_version FROM ledger.queue q
JOIN unnest($1::uuid[], $2::uuid[]) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
ORDER BY q.id
FOR UPDATE OF q`

	// queryHeartbeat extends the leases of claims still held, locking the
	// rows in id order (as completion does) so the two cannot deadlock.
	queryHeartbeat = `WITH held AS (
    SELECT q.id FROM ledger.queue q
    JOIN unnest($1::uuid[], $2::uuid[]) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
    WHERE q.id = ANY($1)
    ORDER BY q.id
    FOR UPDATE OF q
)
UPDATE ledger.queue q SET lease_expires_at = clock_timestamp() + $3::interval
FROM held WHERE q.id = held.id
RETURNING q.id, q.cancel_requested`

	queryExpiredLeases = `SELECT q.id, q.claim_id, q.attempt, q.claimed_by, q.stream_version, q.started_at IS NOT NULL, q.cancel_requested,
       r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
WHERE q.state = 'running' AND q.lease_expires_at < clock_timestamp()
ORDER BY q.lease_expires_at
LIMIT $1
FOR UPDATE OF q SKIP LOCKED`

	queryRequeue = `WITH j AS (
    SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS u(id, version)
), q AS (
    UPDATE ledger.queue q SET state = 'pending', stream_version = j.version, claim_id = NULL, claimed_by = NULL,
        lease_expires_at = NULL, started_at = NULL, available_at = clock_timestamp()
    FROM j WHERE q.id = j.id
)
UPDATE ledger.request_status r SET state = 'pending' FROM j WHERE r.id = j.id`

	queryExpiredApprovals = `SELECT q.id, q.stream_version, r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
WHERE q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp()
LIMIT $1
FOR UPDATE OF q SKIP LOCKED`

	// queryUnattested finds requests that ended outside an executor
	// (cancelled while pending, approval denied) and still lack an attestation.
	queryUnattested = `SELECT r.id, r.tool, r.principal, coalesce(r.run_id, ''), r.state, coalesce(r.error_kind, ''),
       coalesce(r.error, ''), r.input_digest, r.submitted_at, r.finished_at,
       (SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'request:' || r.id)
FROM ledger.request_status r
WHERE r.attestation_digest IS NULL AND r.finished_at IS NOT NULL
ORDER BY r.finished_at
LIMIT $1
FOR UPDATE OF r SKIP LOCKED`

	querySetAttestation = `UPDATE ledger.request_status r SET attestation_digest = u.digest
FROM unnest($1::uuid[], $2::text[]) AS u(id, digest) WHERE r.id = u.id`

	queryRegisterWaiter   = `INSERT INTO ledger.queue_waiters (executor) VALUES ($1) ON CONFLICT (executor) DO UPDATE SET since = clock_timestamp()`
	queryUnregisterWaiter = `DELETE FROM ledger.queue_waiters WHERE executor = $1`
	// queryHorizon is the xid every transaction older than now has passed;
	// queryHorizonPassed tells when all of them have ended.
	queryHorizon       = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text`
	queryHorizonPassed = `SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8`

	queryLastPolicyDigest = `SELECT payload ->> 'policy_digest' FROM ledger.events WHERE stream = 'policy'
ORDER BY version DESC LIMIT 1`
)
