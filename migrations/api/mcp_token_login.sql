-- depends: api/mcp_login_refusal.sql

-- mcp_token_login is the login a live token acts as, NULL for an unknown
-- or revoked token or one whose login may no longer act through it.

CREATE OR REPLACE FUNCTION ledger.mcp_token_login(p_sha256 bytea) RETURNS name
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.login_role FROM ledger.mcp_tokens t
    WHERE t.token_sha256 = p_sha256 AND t.revoked_at IS NULL AND ledger.mcp_login_refusal(t.login_role) IS NULL
$$;

REVOKE ALL ON FUNCTION ledger.mcp_token_login(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.mcp_token_login(bytea) TO ledger_mcp_gateway;
GRANT EXECUTE ON FUNCTION ledger.mcp_token_login(bytea) TO ledger_admin;
