-- depends: skills/skill_actor.sql
-- depends: skills/skill_append.sql
-- depends: skills/skill_set.sql

-- skill_install records an artifact that `execledger skill install` has
-- opened and verified, and makes it the skill's current artifact in state
-- installed; its audit follows (skill_record_audit). The signing key must
-- be trusted, or, with p_tofu and no key yet known for the publisher,
-- is pinned now (trust.key_added, source tofu). Installing over an
-- existing skill keeps the artifact it replaces for rollback.

CREATE OR REPLACE FUNCTION ledger.skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean DEFAULT false) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_install');
    v_key   ledger.skill_trust_keys;
    s       ledger.skills;
    v_new   boolean;
    v_ver   bigint;
    v_owner text;
BEGIN
    IF p_skill_id !~ '^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+$' OR octet_length(p_skill_id) > 128 THEN
        RAISE EXCEPTION 'ledger.skill_install: % is not a skill id', p_skill_id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(p_paths) IS DISTINCT FROM cardinality(p_contents) OR cardinality(p_paths) NOT BETWEEN 1 AND 256 THEN
        RAISE EXCEPTION 'ledger.skill_install: paths and contents must be 1 to 256 and as many' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_tools) t WHERE t <> p_skill_id AND NOT starts_with(t, p_skill_id || '.')) THEN
        RAISE EXCEPTION 'ledger.skill_install: every tool id must be % or begin with %.', p_skill_id, p_skill_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO v_key FROM ledger.skill_trust_keys WHERE key_id = p_key_id;
    IF FOUND AND v_key.revoked_at IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.skill_install: key % of publisher % was revoked at % (%)', p_key_id, v_key.publisher,
            v_key.revoked_at, coalesce(v_key.revoke_reason, 'no reason given') USING ERRCODE = 'insufficient_privilege';
    ELSIF FOUND AND v_key.publisher <> p_publisher THEN
        RAISE EXCEPTION 'ledger.skill_install: key % is trusted for publisher %, not %', p_key_id, v_key.publisher, p_publisher
            USING ERRCODE = 'insufficient_privilege';
    ELSIF NOT FOUND AND NOT p_tofu THEN
        RAISE EXCEPTION 'ledger.skill_install: key % of publisher % is not in the trust store', p_key_id, p_publisher
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'add it with execledger skill trust add, or enable trust on first use ([skills] trust_on_first_use)';
    ELSIF NOT FOUND AND EXISTS (SELECT 1 FROM ledger.skill_trust_keys WHERE publisher = p_publisher) THEN
        RAISE EXCEPTION 'ledger.skill_install: publisher % is pinned to other keys; % is not one of them', p_publisher, p_key_id
            USING ERRCODE = 'insufficient_privilege', HINT = 'trust on first use pins only a publisher''s first key';
    END IF;

    SELECT * INTO s FROM ledger.skills WHERE skill_id = p_skill_id FOR UPDATE;
    v_new := NOT FOUND;
    IF NOT v_new AND s.artifact_digest = p_digest AND s.status <> 'removed' THEN
        RAISE EXCEPTION 'ledger.skill_install: artifact % is already skill %''s current artifact (%)', p_digest, p_skill_id, s.status
            USING ERRCODE = 'unique_violation';
    END IF;
    SELECT min(t.skill_id) INTO v_owner FROM ledger.skill_tools t WHERE t.tool_id = ANY(p_tools) AND t.skill_id <> p_skill_id;
    IF v_owner IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.skill_install: a tool of % is served by skill %', p_skill_id, v_owner USING ERRCODE = 'unique_violation';
    END IF;

    INSERT INTO ledger.skill_artifacts (digest, skill_id, version, publisher, key_id, public_key, payload_digest, signature,
                                        tools, size, installed_by)
    VALUES (p_digest, p_skill_id, p_version, p_publisher, p_key_id, p_public_key, p_payload_digest, p_signature,
            p_tools, p_size, v_actor)
    ON CONFLICT (digest) DO NOTHING;
    IF FOUND THEN
        INSERT INTO ledger.skill_files (artifact_digest, path, content)
        SELECT p_digest, u.p, u.c FROM unnest(p_paths, p_contents) u(p, c);
    ELSIF NOT EXISTS (SELECT 1 FROM ledger.skill_artifacts a WHERE a.digest = p_digest AND a.skill_id = p_skill_id) THEN
        RAISE EXCEPTION 'ledger.skill_install: artifact % belongs to another skill', p_digest USING ERRCODE = 'unique_violation';
    END IF;

    IF v_new THEN
        v_ver := coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'skill:' || p_skill_id), 0);
        INSERT INTO ledger.skills (skill_id, status, artifact_digest, stream_version)
        VALUES (p_skill_id, 'installed', p_digest, v_ver)
        RETURNING * INTO s;
    ELSE
        IF s.status <> 'removed' AND (s.cleared OR s.status = 'enabled') THEN
            s.previous_digest := s.artifact_digest;
            s.previous_cleared := s.cleared;
        END IF;
        s.artifact_digest := p_digest;
    END IF;
    IF v_key.key_id IS NULL THEN
        INSERT INTO ledger.skill_trust_keys (key_id, publisher, public_key, source, added_by)
        VALUES (p_key_id, p_publisher, p_public_key, 'tofu', v_actor);
        s.stream_version := ledger.skill_append('skill:' || p_skill_id, s.stream_version, 'trust.key_added',
            jsonb_build_object('key_id', p_key_id, 'publisher', p_publisher, 'public_key', encode(p_public_key, 'base64'),
                               'source', 'tofu', 'skill_id', p_skill_id, 'note', NULL, 'actor', v_actor),
            v_actor);
    END IF;
    s.status := 'installed';
    s.cleared := false;
    s.approvals := '{}';
    s.failed_checks := NULL;
    DELETE FROM ledger.skill_tools WHERE skill_id = p_skill_id;
    PERFORM ledger.skill_set(s, 'skill.installed',
        jsonb_build_object('payload_digest', p_payload_digest, 'tools', to_jsonb(p_tools), 'installed_by', v_actor,
                           'size', p_size, 'trust', CASE WHEN v_key.key_id IS NULL THEN 'tofu' ELSE v_key.source END,
                           'previous_digest', s.previous_digest),
        v_actor);
    INSERT INTO ledger.skill_tools (tool_id, skill_id) SELECT t, p_skill_id FROM unnest(p_tools) t;
    RETURN ROW(true, 'installed', 'installed ' || p_skill_id || ' ' || p_version)::ledger.skill_result;
END $_$;

REVOKE ALL ON FUNCTION ledger.skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean) TO ledger_skill_admin;
