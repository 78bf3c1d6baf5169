-- depends: skills/skill_actor.sql
-- depends: skills/skill_lock.sql
-- depends: skills/skill_refuse.sql
-- depends: skills/skill_set.sql

-- skill_rollback makes the artifact the current one replaced current
-- again, disabled: an operator enables it (it keeps its clearance).

CREATE OR REPLACE FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_rollback');
    s       ledger.skills;
    v_from  text;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_rollback', p_skill_id);
    IF s.status = 'removed' OR s.previous_digest IS NULL THEN
        v_why := format('skill %s has no earlier artifact to roll back to', p_skill_id);
        PERFORM ledger.skill_refuse(s, 'rollback', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    v_from := s.artifact_digest;
    s.artifact_digest := s.previous_digest;
    s.cleared := s.previous_cleared;
    s.previous_digest := v_from;
    s.previous_cleared := false;
    s.status := 'disabled';
    s.approvals := '{}';
    s.failed_checks := NULL;
    DELETE FROM ledger.skill_tools WHERE skill_id = p_skill_id;
    INSERT INTO ledger.skill_tools (tool_id, skill_id)
    SELECT t, p_skill_id FROM ledger.skill_artifacts a, unnest(a.tools) t WHERE a.digest = s.artifact_digest;
    PERFORM ledger.skill_set(s, 'skill.rolled_back',
        jsonb_build_object('from_digest', v_from,
                           'from_version', (SELECT a.version FROM ledger.skill_artifacts a WHERE a.digest = v_from),
                           'reason', p_reason), v_actor);
    RETURN ROW(true, 'disabled', 'rolled back to the earlier artifact; enable it to run it')::ledger.skill_result;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text) TO ledger_skill_admin;
