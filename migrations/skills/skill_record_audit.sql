-- depends: api/current_principal.sql
-- depends: skills/skill_actor.sql
-- depends: skills/skill_lock.sql
-- depends: skills/skill_set.sql

-- skill_record_audit records an audit of the skill's current artifact
-- (p_digest must be it). A passing first audit verifies the skill; a
-- failing audit, first or later, quarantines it with every failed check.
-- Executors record the scheduled re-audits: they may quarantine a skill
-- but never clear one.

CREATE OR REPLACE FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text DEFAULT 'install'::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_executor boolean := pg_has_role(session_user, 'ledger_executor', 'MEMBER');
    v_actor    text;
    s          ledger.skills;
    v_failed   jsonb;
BEGIN
    IF v_executor AND NOT pg_has_role(session_user, 'ledger_skill_admin', 'MEMBER') THEN
        v_actor := coalesce(ledger.current_principal(), session_user);
    ELSE
        v_actor := ledger.skill_actor('ledger.skill_record_audit');
        v_executor := false;
    END IF;
    IF jsonb_typeof(p_checks) IS DISTINCT FROM 'array' OR p_trigger NOT IN ('install', 'schedule', 'trust_store', 'operator') THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: checks must be a JSON array and trigger one of install, schedule, trust_store, operator'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    s := ledger.skill_lock('ledger.skill_record_audit', p_skill_id);
    IF s.artifact_digest <> p_digest OR s.status = 'removed' THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: % is not skill %''s current artifact (it is % in state %)',
            p_digest, p_skill_id, s.artifact_digest, s.status USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF v_executor AND p_passed AND s.status IN ('installed', 'quarantined') THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: an executor may not clear skill % (%)', p_skill_id, s.status
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_failed := coalesce((SELECT jsonb_agg(c) FROM jsonb_array_elements(p_checks) c WHERE (c ->> 'passed')::boolean IS NOT TRUE), '[]');
    IF p_passed AND jsonb_array_length(v_failed) > 0 THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: an audit with failed checks did not pass' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_passed THEN
        IF s.status = 'installed' THEN
            s.status := 'verified';
            s.cleared := true;
        END IF;
        s.failed_checks := NULL;
        PERFORM ledger.skill_set(s, 'skill.audited',
            jsonb_build_object('passed', true, 'checks', p_checks, 'failed_checks', '[]'::jsonb, 'trigger', p_trigger), v_actor);
        RETURN ROW(true, s.status, 'audit passed')::ledger.skill_result;
    END IF;
    s.failed_checks := v_failed;
    PERFORM ledger.skill_set(s, 'skill.audited',
        jsonb_build_object('passed', false, 'checks', p_checks, 'failed_checks', v_failed, 'trigger', p_trigger), v_actor);
    s := ledger.skill_lock('ledger.skill_record_audit', p_skill_id);
    s.status := 'quarantined';
    s.cleared := false;
    s.approvals := '{}';
    PERFORM ledger.skill_set(s, 'skill.quarantined',
        jsonb_build_object('failed_checks', v_failed, 'reason', 'audit failed', 'trigger', p_trigger), v_actor);
    RETURN ROW(true, 'quarantined', format('audit failed: %s check(s) failed; the skill is quarantined', jsonb_array_length(v_failed)))::ledger.skill_result;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text) TO ledger_skill_admin;
GRANT EXECUTE ON FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text) TO ledger_executor;
