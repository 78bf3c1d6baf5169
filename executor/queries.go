package executor

// The executor's SQL. An executor login writes requests only through
// ledger.executor_record (ledger.Store.Record), which checks that it holds
// the claim (or settles an expired lease or approval), and takes row locks
// through ledger.lock_*.
const (
	queryClaim = `SELECT id, claim_id, attempt, stream_version, principal, tool, coalesce(run_id, ''), input, context,
       context_bound, input_digest, approved, charged, submitted_at, lease_expires_at
FROM ledger.claim_requests($1, $2, $3::interval, false)`

	// queryLockBudgets creates the missing budget rows of the claimed
	// requests' runs and locks them, in (principal, run_id) order.
	queryLockBudgets = `SELECT principal, run_id, max_calls, used, ended FROM ledger.lock_claimed_budgets($1, $2, $3)`

	// queryLockClaims locks the queue rows of jobs whose claims are still
	// theirs; a row rescued or cancelled-and-finished meanwhile is skipped.
	queryLockClaims = `SELECT id, stream_version FROM ledger.lock_claims($1, $2)`

	// queryHeartbeat extends the leases of claims still held, locking the
	// rows in id order (as completion does) so the two cannot deadlock.
	queryHeartbeat = `SELECT id, cancel_requested FROM ledger.heartbeat($1, $2, $3::interval)`

	// queryCancelFlags reads which of the given claims ledger.cancel has
	// flagged: a cancel NOTIFY is only a hint to look.
	queryCancelFlags = `SELECT q.id FROM ledger.queue q
JOIN unnest($1::uuid[], $2::uuid[]) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
WHERE q.cancel_requested`

	queryExpiredLeases = `SELECT id, claim_id, attempt, claimed_by, stream_version, started, cancel_requested,
       tool, principal, run_id, input_digest
FROM ledger.lock_expired_leases($1)`

	queryExpiredApprovals = `SELECT id, stream_version, tool, principal, run_id, input_digest
FROM ledger.lock_expired_approvals($1)`

	// queryUnattested finds requests that ended outside an executor
	// (cancelled while pending, approval denied) and still lack an attestation.
	queryUnattested = `SELECT id, tool, principal, run_id, state, error_kind, error, input_digest, submitted_at,
       finished_at, stream_version
FROM ledger.lock_unattested($1)`

	queryRegisterWaiter   = `SELECT ledger.register_waiter($1)`
	queryUnregisterWaiter = `SELECT ledger.unregister_waiter($1)`
	// queryHorizon is the xid every transaction older than now has passed;
	// queryHorizonPassed tells when all of them have ended.
	queryHorizon       = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text`
	queryHorizonPassed = `SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8`

	// queryLastPolicyDigest reads the newest policy.published that is part
	// of the record (ledger.in_record: not one written behind the sealer).
	queryLastPolicyDigest = `SELECT payload ->> 'policy_digest' FROM ledger.events
WHERE stream = 'policy' AND ledger.in_record(tx_id, position)
ORDER BY version DESC LIMIT 1`
)

// queryNewestCheckpoint reads the Merkle log's newest checkpoint.
const queryNewestCheckpoint = `SELECT size, root_hash, origin FROM ledger.checkpoints ORDER BY size DESC LIMIT 1`
