-- depends: skills/skill_actor.sql
-- depends: skills/skill_append.sql
-- depends: skills/skill_set.sql

-- skill_trust_revoke revokes a key: every skill whose current artifact it
-- signed and that could run or be enabled is disabled, in the same
-- transaction. It returns how many skills it disabled.

CREATE OR REPLACE FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text DEFAULT NULL::text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_trust_revoke');
    k       ledger.skill_trust_keys;
    s       ledger.skills;
    n       int := 0;
BEGIN
    SELECT * INTO k FROM ledger.skill_trust_keys WHERE key_id = p_key_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.skill_trust_revoke: no key %', p_key_id USING ERRCODE = 'no_data_found';
    ELSIF k.revoked_at IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.skill_trust_revoke: key % was revoked at %', p_key_id, k.revoked_at
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    UPDATE ledger.skill_trust_keys SET revoked_at = clock_timestamp(), revoked_by = v_actor, revoke_reason = p_reason
    WHERE key_id = p_key_id;
    PERFORM ledger.skill_append('skill:trust',
        coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'skill:trust'), 0), 'trust.key_revoked',
        jsonb_build_object('key_id', p_key_id, 'publisher', k.publisher, 'reason', p_reason, 'actor', v_actor),
        v_actor);
    FOR s IN
        SELECT sk.* FROM ledger.skills sk JOIN ledger.skill_artifacts a ON a.digest = sk.artifact_digest
        WHERE a.key_id = p_key_id AND sk.status IN ('enabled', 'verified', 'approved')
        ORDER BY sk.skill_id FOR UPDATE OF sk
    LOOP
        s.status := 'disabled';
        PERFORM ledger.skill_set(s, 'skill.disabled',
            jsonb_build_object('reason', 'publisher key revoked', 'revoked_key_id', p_key_id), v_actor);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text) TO ledger_skill_admin;
