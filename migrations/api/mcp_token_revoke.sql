-- mcp_token_revoke revokes a live token; false when there is none.

CREATE OR REPLACE FUNCTION ledger.mcp_token_revoke(p_token_id text) RETURNS boolean
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH r AS (
        UPDATE ledger.mcp_tokens SET revoked_at = clock_timestamp(), revoked_by = session_user
        WHERE token_id = p_token_id AND revoked_at IS NULL
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM r)
$$;

REVOKE ALL ON FUNCTION ledger.mcp_token_revoke(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.mcp_token_revoke(text) TO ledger_admin;
