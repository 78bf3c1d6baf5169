-- Migration 018: bearer tokens of `execledger mcp` over HTTP.
--
-- An administrator maps a token to a login role; the MCP server, given a
-- token, asks ledger.mcp_token_login for the login and then connects as
-- that login, so that ledger.submit takes the principal from session_user
-- as for any other client: the token chooses a login, the database still
-- decides everything the login may do. Only the token's SHA-256 is stored:
-- a reader of this table (or of a backup) learns no token.
--
-- A token may not map to a login that could do more than submit, cancel
-- and read its own requests: a superuser, a role that bypasses row
-- security, or a member of ledger_executor, ledger_admin or
-- ledger_skill_admin is refused when the token is created and again at
-- every lookup (a grant made later disables the token rather than
-- widening it).
--
-- The gateway's own login needs only ledger_mcp_gateway: EXECUTE on
-- ledger.mcp_token_login, nothing else.

DO $$
BEGIN
    BEGIN
        CREATE ROLE ledger_mcp_gateway NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    GRANT USAGE ON SCHEMA ledger TO ledger_mcp_gateway;
END $$;

CREATE TABLE ledger.mcp_tokens (
    token_id     text        PRIMARY KEY,
    token_sha256 bytea       NOT NULL,
    login_role   name        NOT NULL,
    note         text,
    created_by   name        NOT NULL DEFAULT session_user,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    revoked_at   timestamptz,
    revoked_by   name,
    CONSTRAINT mcp_tokens_id_check CHECK (token_id ~ '^[0-9a-f]{12}$'),
    CONSTRAINT mcp_tokens_sha256_check CHECK (octet_length(token_sha256) = 32),
    CONSTRAINT mcp_tokens_note_check CHECK (note IS NULL OR octet_length(note) <= 1024),
    CONSTRAINT mcp_tokens_revoked_check CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
CREATE UNIQUE INDEX mcp_tokens_sha256_idx ON ledger.mcp_tokens (token_sha256);
COMMENT ON TABLE ledger.mcp_tokens IS 'Bearer tokens of execledger mcp (SHA-256 only) and the login role each acts as.';

-- mcp_login_refusal says why login may not act through a token, or NULL.
CREATE FUNCTION ledger.mcp_login_refusal(p_login name) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN r.oid IS NULL THEN format('no login role %I', p_login)
        WHEN NOT r.rolcanlogin THEN format('role %I cannot log in', p_login)
        WHEN r.rolsuper OR r.rolbypassrls THEN format('role %I is a superuser or bypasses row security', p_login)
        WHEN pg_has_role(r.oid, 'ledger_executor', 'MEMBER') OR pg_has_role(r.oid, 'ledger_admin', 'MEMBER')
          OR pg_has_role(r.oid, 'ledger_skill_admin', 'MEMBER')
            THEN format('role %I is an executor, admin or skill admin: a token may act only as a submitter', p_login)
        WHEN NOT EXISTS (SELECT 1 FROM ledger.principals p WHERE p.login_role = p_login)
            THEN format('role %I is not mapped to a principal (ledger.principals)', p_login)
    END
    FROM (SELECT 1) one LEFT JOIN pg_roles r ON r.rolname = p_login
$$;

CREATE FUNCTION ledger.mcp_token_create(p_token_id text, p_sha256 bytea, p_login name, p_note text DEFAULT NULL)
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

CREATE FUNCTION ledger.mcp_token_revoke(p_token_id text) RETURNS boolean
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH r AS (
        UPDATE ledger.mcp_tokens SET revoked_at = clock_timestamp(), revoked_by = session_user
        WHERE token_id = p_token_id AND revoked_at IS NULL
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM r)
$$;

-- mcp_token_login is the login a live token acts as, NULL for an unknown
-- or revoked token or one whose login may no longer act through it.
CREATE FUNCTION ledger.mcp_token_login(p_sha256 bytea) RETURNS name
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.login_role FROM ledger.mcp_tokens t
    WHERE t.token_sha256 = p_sha256 AND t.revoked_at IS NULL AND ledger.mcp_login_refusal(t.login_role) IS NULL
$$;

REVOKE ALL ON ledger.mcp_tokens FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.mcp_login_refusal(name), ledger.mcp_token_create(text, bytea, name, text),
    ledger.mcp_token_revoke(text), ledger.mcp_token_login(bytea) FROM PUBLIC;
GRANT SELECT ON ledger.mcp_tokens TO ledger_admin, ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.mcp_token_create(text, bytea, name, text), ledger.mcp_token_revoke(text) TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.mcp_token_login(bytea) TO ledger_mcp_gateway, ledger_admin;
