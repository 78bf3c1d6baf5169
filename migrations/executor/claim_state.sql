-- claim_state is the one rule for what an executor login may write about
-- a request, given the claim it acts under. A request is:
--   held          when the caller's login role holds its current claim;
--   lease_gone    when that claim (any role's) has an expired lease: any
--                 executor may rescue it;
--   approval_gone when it waited for approval past its expiry;
--   unattested    when it ended in SQL (cancelled while pending, approval
--                 denied) and has no attestation yet.
-- executor_record maps event types and state changes onto these. A set-returning SQL function without SET, so that it
-- is inlined into its callers (every one a SECURITY DEFINER function with
-- a fixed search_path); one row per distinct request id.

CREATE OR REPLACE FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[]) RETURNS TABLE(request_id uuid, claim_id uuid, queue_state text, claimed_role name, started boolean, final boolean, held boolean, lease_gone boolean, approval_gone boolean, unattested boolean)
    LANGUAGE sql STABLE
    AS $$
    SELECT k.req, k.claim, q.state, q.claimed_role, q.started_at IS NOT NULL,
           CASE WHEN r.id IS NOT NULL THEN r.finished_at IS NOT NULL END,
           coalesce(q.state = 'running' AND q.claim_id = k.claim AND q.claimed_role = session_user, false),
           coalesce(q.state = 'running' AND q.claim_id = k.claim AND q.lease_expires_at < clock_timestamp(), false),
           coalesce(q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp(), false),
           coalesce(q.id IS NULL AND r.finished_at IS NOT NULL AND r.attestation_digest IS NULL, false)
    FROM (SELECT DISTINCT ON (u.req) u.req, u.claim
          FROM unnest(request_ids, claim_ids) AS u(req, claim) ORDER BY u.req) k
    -- One primary-key lookup per request whatever the statistics say
    -- (LIMIT keeps the planner from turning these into table-wide joins).
    LEFT JOIN LATERAL (SELECT x.* FROM ledger.queue x WHERE x.id = k.req LIMIT 1) q ON true
    LEFT JOIN LATERAL (SELECT x.id, x.finished_at, x.attestation_digest FROM ledger.request_status x
                       WHERE x.id = k.req AND q.id IS NULL LIMIT 1) r ON true
$$;

REVOKE ALL ON FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[]) FROM PUBLIC;
