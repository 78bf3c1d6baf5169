-- skill_append appends one event to stream p_stream at the version after
-- p_version and returns that version.

CREATE OR REPLACE FUNCTION ledger.skill_append(p_stream text, p_version bigint, p_type text, p_payload jsonb, p_actor text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES (p_stream, p_version + 1, p_type, p_payload::json,
            json_build_object('actor', p_actor, 'login_role', session_user))
    RETURNING version;
$$;

REVOKE ALL ON FUNCTION ledger.skill_append(p_stream text, p_version bigint, p_type text, p_payload jsonb, p_actor text) FROM PUBLIC;
