-- depends: skills/skill_actor.sql
-- depends: skills/skill_lock.sql
-- depends: skills/skill_refuse.sql
-- depends: skills/skill_set.sql

-- skill_approve records one approval of a quarantined skill's current
-- artifact (p_digest must be it: an approval is bound to the bytes the
-- approver reviewed). Two approvals by distinct principals, neither the
-- installer, clear it (state approved).

CREATE OR REPLACE FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_approve');
    s       ledger.skills;
    v_by    text;
    v_why   text;
BEGIN
    IF p_note IS NOT NULL AND octet_length(p_note) > 1024 THEN
        RAISE EXCEPTION 'ledger.skill_approve: note is % bytes, the limit is 1024', octet_length(p_note) USING ERRCODE = 'program_limit_exceeded';
    END IF;
    s := ledger.skill_lock('ledger.skill_approve', p_skill_id);
    SELECT a.installed_by INTO v_by FROM ledger.skill_artifacts a WHERE a.digest = s.artifact_digest;
    v_why := CASE
        WHEN s.status <> 'quarantined' THEN format('skill %s is %s, not quarantined: there is nothing to approve', p_skill_id, s.status)
        WHEN p_digest IS DISTINCT FROM s.artifact_digest THEN format('the approval names artifact %s, but the quarantined artifact is %s', p_digest, s.artifact_digest)
        WHEN v_actor = v_by THEN format('%s installed this artifact and may not approve it (two-person rule)', v_actor)
        WHEN v_actor = ANY(s.approvals) THEN format('%s has already approved this artifact; a second approval must come from another principal', v_actor)
    END;
    IF v_why IS NOT NULL THEN
        PERFORM ledger.skill_refuse(s, 'approve', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    s.approvals := s.approvals || v_actor;
    IF cardinality(s.approvals) >= 2 THEN
        s.status := 'approved';
        s.cleared := true;
    END IF;
    PERFORM ledger.skill_set(s, 'skill.approved',
        jsonb_build_object('approver', v_actor, 'note', p_note, 'approvals_needed', 2), v_actor);
    RETURN ROW(true, s.status, format('approval %s of 2 recorded', cardinality(s.approvals)))::ledger.skill_result;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text) TO ledger_skill_admin;
