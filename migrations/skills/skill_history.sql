-- skill_history is a skill's stream (or the trust store's, 'trust') for
-- those who manage skills, who may not read the rest of the log.

CREATE OR REPLACE FUNCTION ledger.skill_history(p_skill_id text) RETURNS TABLE(version bigint, type text, payload text, actor text, recorded_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.version, e.type, e.payload::text, e.metadata::jsonb ->> 'actor', e.recorded_at
    FROM ledger.events e WHERE e.stream = 'skill:' || p_skill_id ORDER BY e.version
$$;

REVOKE ALL ON FUNCTION ledger.skill_history(p_skill_id text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_history(p_skill_id text) TO ledger_skill_admin;
GRANT EXECUTE ON FUNCTION ledger.skill_history(p_skill_id text) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.skill_history(p_skill_id text) TO ledger_admin;
