-- depends: skills/skill_actor.sql
-- depends: skills/skill_key_trusted.sql
-- depends: skills/skill_lock.sql
-- depends: skills/skill_refuse.sql
-- depends: skills/skill_set.sql

-- skill_enable makes a cleared skill active: its tools run.

CREATE OR REPLACE FUNCTION ledger.skill_enable(p_skill_id text, p_note text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_enable');
    s       ledger.skills;
    v_key   text;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_enable', p_skill_id);
    SELECT a.key_id INTO v_key FROM ledger.skill_artifacts a WHERE a.digest = s.artifact_digest;
    v_why := CASE
        WHEN s.status = 'enabled' THEN format('skill %s is already enabled', p_skill_id)
        WHEN s.status = 'quarantined' THEN format('skill %s is quarantined: it needs approvals from two principals other than its installer (it has %s)',
                                                  p_skill_id, cardinality(s.approvals))
        WHEN s.status NOT IN ('verified', 'approved', 'disabled') THEN format('skill %s is %s and cannot be enabled', p_skill_id, s.status)
        WHEN NOT s.cleared THEN format('skill %s''s artifact has neither passed an audit nor been approved by two principals', p_skill_id)
        WHEN NOT ledger.skill_key_trusted(v_key) THEN format('skill %s is signed by key %s, which is not trusted (revoked or removed)', p_skill_id, v_key)
    END;
    IF v_why IS NOT NULL THEN
        PERFORM ledger.skill_refuse(s, 'enable', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    s.status := 'enabled';
    PERFORM ledger.skill_set(s, 'skill.enabled', jsonb_build_object('note', p_note), v_actor);
    RETURN ROW(true, 'enabled', 'enabled ' || p_skill_id)::ledger.skill_result;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_enable(p_skill_id text, p_note text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_enable(p_skill_id text, p_note text) TO ledger_skill_admin;
