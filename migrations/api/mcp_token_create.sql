-- depends: api/mcp_login_refusal.sql

-- mcp_token_create stores a bearer token of execledger mcp: its id, the
-- SHA-256 of the token (never the token) and the login it acts as, which
-- must be a mapped, unprivileged login (mcp_login_refusal).

CREATE OR REPLACE FUNCTION ledger.mcp_token_create(p_token_id text, p_sha256 bytea, p_login name, p_note text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    why text := ledger.mcp_login_refusal(p_login);
BEGIN
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'mcp token: %', why USING ERRCODE = '22023';
    END IF;
    INSERT INTO ledger.mcp_tokens (token_id, token_sha256, login_role, note)
    VALUES (p_token_id, p_sha256, p_login, nullif(p_note, ''));
END
$$;

REVOKE ALL ON FUNCTION ledger.mcp_token_create(text, bytea, name, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.mcp_token_create(text, bytea, name, text) TO ledger_admin;
