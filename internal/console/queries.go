package console

// The console's SQL. Every statement runs on the signed-in person's own
// pool, so row security and grants decide what it returns.

const (
	// queryRequests lists request_status rows (the table behind
	// ledger.requests, which adds the idempotency key and input digest);
	// requestFilter.where adds the conditions, each naming a column, and
	// the keyset bound (submitted_at, id) < cursor, which the index
	// request_status_submitted_idx (020) serves in either direction.
	queryRequests = `SELECT id, principal, tool, run_id, idempotency_key, state, error_kind, submitted_at, finished_at
FROM ledger.request_status`
	queryRequestsOrder = ` ORDER BY submitted_at DESC, id DESC LIMIT `

	queryRequest = `SELECT id, principal, tool, run_id, idempotency_key, 'sha256:' || encode(input_digest, 'hex'),
       state, error_kind, error, output, tier, attestation_digest, submitted_at, finished_at
FROM ledger.request_status WHERE id = $1`

	queryDecisions = `SELECT recorded_at, kind, event_type, attempt, decision, stage, reason_code,
       coalesce(determining_policies, '{}'), policy_digest, approver, state, error_kind, resources
FROM ledger.audit_trail WHERE request_id = $1 ORDER BY position, kind`

	// queryAwaitingOwn is what a login that may not call
	// ledger.awaiting_approval (a submitter) sees: its own principal's
	// waiting requests, by row security.
	queryAwaitingOwn = `SELECT id, principal, tool, run_id, 'sha256:' || encode(input_digest, 'hex'), submitted_at
FROM ledger.request_status WHERE state = 'awaiting_approval'
ORDER BY submitted_at, id LIMIT 200`
)
