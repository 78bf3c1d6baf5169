-- mcp_login_refusal says why login may not act through an execledger mcp
-- bearer token (migration 018, ledger.mcp_tokens), or NULL.

CREATE OR REPLACE FUNCTION ledger.mcp_login_refusal(p_login name) RETURNS text
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

REVOKE ALL ON FUNCTION ledger.mcp_login_refusal(name) FROM PUBLIC;
