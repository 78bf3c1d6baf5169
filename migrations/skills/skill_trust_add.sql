-- depends: skills/skill_actor.sql
-- depends: skills/skill_append.sql

-- skill_trust_add adds a publisher key to the trust store. A revoked key
-- cannot come back.

CREATE OR REPLACE FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_trust_add');
    k       ledger.skill_trust_keys;
BEGIN
    IF octet_length(p_public_key) IS DISTINCT FROM 32 OR p_key_id IS NULL OR octet_length(p_key_id) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'ledger.skill_trust_add: a key is a key id and a 32-byte Ed25519 public key' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_publisher IS NULL OR p_publisher !~ '^[a-z0-9][a-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION 'ledger.skill_trust_add: % is not a publisher name', p_publisher USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO k FROM ledger.skill_trust_keys WHERE key_id = p_key_id FOR UPDATE;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.skill_trust_add: key % is already in the trust store (publisher %, %)', p_key_id, k.publisher,
            CASE WHEN k.revoked_at IS NULL THEN 'trusted' ELSE 'revoked' END USING ERRCODE = 'unique_violation';
    END IF;
    INSERT INTO ledger.skill_trust_keys (key_id, publisher, public_key, source, added_by)
    VALUES (p_key_id, p_publisher, p_public_key, 'operator', v_actor);
    PERFORM ledger.skill_append('skill:trust',
        coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'skill:trust'), 0), 'trust.key_added',
        jsonb_build_object('key_id', p_key_id, 'publisher', p_publisher, 'public_key', encode(p_public_key, 'base64'),
                           'source', 'operator', 'note', p_note, 'skill_id', NULL, 'actor', v_actor),
        v_actor);
END $_$;

REVOKE ALL ON FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text) TO ledger_skill_admin;
