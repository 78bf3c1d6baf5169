-- depends: skills/skill_append.sql

-- skill_set moves a locked skill to its new state, appends the event that
-- records it and returns the new stream version. The payload gets the
-- skill's resulting status, version and artifact.

CREATE OR REPLACE FUNCTION ledger.skill_set(s ledger.skills, p_type text, p_payload jsonb, p_actor text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    a ledger.skill_artifacts;
    v bigint;
BEGIN
    SELECT * INTO a FROM ledger.skill_artifacts WHERE digest = s.artifact_digest;
    v := ledger.skill_append('skill:' || s.skill_id, s.stream_version, p_type,
        jsonb_build_object('skill_id', s.skill_id, 'status', s.status, 'version', a.version, 'publisher', a.publisher,
                           'key_id', a.key_id, 'artifact_digest', a.digest, 'approvals', to_jsonb(s.approvals),
                           'actor', p_actor) || p_payload,
        p_actor);
    UPDATE ledger.skills
    SET status = s.status, artifact_digest = s.artifact_digest, cleared = s.cleared, approvals = s.approvals,
        failed_checks = s.failed_checks, previous_digest = s.previous_digest, previous_cleared = s.previous_cleared,
        stream_version = v, updated_at = clock_timestamp()
    WHERE skill_id = s.skill_id;
    RETURN v;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_set(s ledger.skills, p_type text, p_payload jsonb, p_actor text) FROM PUBLIC;
