-- depends: skills/skill_actor.sql
-- depends: skills/skill_lock.sql
-- depends: skills/skill_refuse.sql
-- depends: skills/skill_set.sql

-- skill_remove retires a skill that is not enabled: its tools are gone.

CREATE OR REPLACE FUNCTION ledger.skill_remove(p_skill_id text, p_reason text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_remove');
    s       ledger.skills;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_remove', p_skill_id);
    IF s.status IN ('enabled', 'removed') THEN
        v_why := CASE s.status WHEN 'enabled' THEN format('skill %s is enabled: disable it first', p_skill_id)
                               ELSE format('skill %s is already removed', p_skill_id) END;
        PERFORM ledger.skill_refuse(s, 'remove', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    s.status := 'removed';
    s.cleared := false;
    s.previous_digest := NULL;
    DELETE FROM ledger.skill_tools WHERE skill_id = p_skill_id;
    PERFORM ledger.skill_set(s, 'skill.removed', jsonb_build_object('reason', p_reason), v_actor);
    RETURN ROW(true, 'removed', 'removed ' || p_skill_id)::ledger.skill_result;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_remove(p_skill_id text, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_remove(p_skill_id text, p_reason text) TO ledger_skill_admin;
