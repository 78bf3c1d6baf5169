-- claim_refusal says why a request in state st refuses what was asked.

CREATE OR REPLACE FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN st_queue_state IS NULL AND st_final IS NULL THEN 'no such request'
        WHEN st_queue_state IS NULL THEN 'it has ended'
        WHEN st_queue_state = 'running' AND st_claimed_role IS DISTINCT FROM session_user
            THEN 'its claim is held by login role ' || coalesce(st_claimed_role::text, 'none') || ' under that claim id or another'
        WHEN st_queue_state = 'running' THEN 'claim ' || coalesce(st_claim::text, 'NULL') || ' is not its current claim, or its lease has not expired'
        ELSE 'it is ' || st_queue_state
    END
$$;

REVOKE ALL ON FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean) FROM PUBLIC;
