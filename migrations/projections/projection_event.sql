-- projection_event records an event of a projection's own stream.

CREATE OR REPLACE FUNCTION ledger.projection_event(p_name text, p_type text, p_payload json) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            p_type, p_payload, json_build_object('actor', session_user, 'login_role', session_user));
$$;

REVOKE ALL ON FUNCTION ledger.projection_event(p_name text, p_type text, p_payload json) FROM PUBLIC;
