-- depends: skills/skill_append.sql

-- skill_refuse records a refused request on an existing skill.

CREATE OR REPLACE FUNCTION ledger.skill_refuse(s ledger.skills, p_action text, p_reason text, p_actor text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v bigint;
BEGIN
    v := ledger.skill_append('skill:' || s.skill_id, s.stream_version, 'skill.refused',
        jsonb_build_object('skill_id', s.skill_id, 'action', p_action, 'reason', p_reason, 'status', s.status,
                           'artifact_digest', s.artifact_digest, 'actor', p_actor),
        p_actor);
    UPDATE ledger.skills SET stream_version = v WHERE skill_id = s.skill_id;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_refuse(s ledger.skills, p_action text, p_reason text, p_actor text) FROM PUBLIC;
