-- depends: skills/skill_actor.sql
-- depends: skills/skill_lock.sql
-- depends: skills/skill_refuse.sql
-- depends: skills/skill_set.sql

-- skill_disable stops a skill's tools from running.

CREATE OR REPLACE FUNCTION ledger.skill_disable(p_skill_id text, p_reason text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_disable');
    s       ledger.skills;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_disable', p_skill_id);
    IF s.status NOT IN ('enabled', 'verified', 'approved', 'quarantined') THEN
        v_why := format('skill %s is %s and cannot be disabled', p_skill_id, s.status);
        PERFORM ledger.skill_refuse(s, 'disable', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    s.status := 'disabled';
    PERFORM ledger.skill_set(s, 'skill.disabled', jsonb_build_object('reason', coalesce(p_reason, 'disabled by an operator'), 'revoked_key_id', NULL), v_actor);
    RETURN ROW(true, 'disabled', 'disabled ' || p_skill_id)::ledger.skill_result;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_disable(p_skill_id text, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_disable(p_skill_id text, p_reason text) TO ledger_skill_admin;
