-- depends: api/current_principal.sql

-- skill_actor is the calling principal, who must hold ledger_skill_admin.

CREATE OR REPLACE FUNCTION ledger.skill_actor(p_op text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v text := ledger.current_principal();
BEGIN
    IF v IS NULL OR NOT pg_has_role(session_user, 'ledger_skill_admin', 'MEMBER') THEN
        RAISE EXCEPTION '%: login role "%" is not a skill admin (ledger_skill_admin, mapped in ledger.principals)', p_op, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_actor(p_op text) FROM PUBLIC;
