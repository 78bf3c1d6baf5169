-- 012: skills. Signed artifacts, the publisher trust store, and the
-- lifecycle of each installed skill, enforced here, where its events are
-- written.
--
-- A skill is a signed archive (package internal/skill/artifact) whose
-- manifest names tools that run in tier A. `execledger skill install`
-- opens and verifies the archive and audits its modules in Go; what it
-- finds is handed to ledger.skill_install and ledger.skill_record_audit.
-- The database cannot check an Ed25519 signature or run a WebAssembly
-- validator, so it does not take the installer's word for either where it
-- matters: the executor re-derives the payload digest from the stored
-- files, verifies the signature against the trust store and re-runs the
-- audit before a skill's tool runs (internal/skill/runtime). What the
-- database does enforce is everything about state and people: the
-- lifecycle's transitions, the two-person rule, trust-on-first-use and
-- revocation.
--
-- Streams: skill:<id> holds a skill's lifecycle (skill.*) and the
-- trust.key_added of a key pinned by its install (trust on first use);
-- skill:trust holds the trust store's changes made by operators
-- (trust.key_added, trust.key_revoked). "trust" is not a valid skill id
-- (ids are dotted, and its first segment is reserved), so the two never
-- meet. Every lifecycle event carries the status it leaves the skill in,
-- so that the skill_status projection copies decisions and never re-makes
-- them.
--
-- Storage. Since this migration a skill's storage_put writes reach
-- ledger.skill_storage only in the transaction that records its call's
-- successful outcome (executor.Result.StorageWrites); 005's note that each
-- put commits on its own no longer holds.
--
-- Refusals. A request that the lifecycle refuses on an existing skill (an
-- approval by the installer, a second approval by the same principal,
-- enabling a quarantined skill without two approvals, …) is recorded as
-- skill.refused on the skill's stream and reported to the caller as
-- ok = false with a message: the refusal is kept, not rolled back with an
-- exception. Requests about nothing (no such skill, no privilege, a
-- malformed argument) raise.

DO $$
BEGIN
    BEGIN
        CREATE ROLE ledger_skill_admin NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    GRANT USAGE ON SCHEMA ledger TO ledger_skill_admin;
END $$;

-- ---------------------------------------------------------------------
-- Artifacts: immutable once installed.

CREATE TABLE ledger.skill_artifacts (
    digest         text        PRIMARY KEY,
    skill_id       text        NOT NULL,
    version        text        NOT NULL,
    publisher      text        NOT NULL,
    key_id         text        NOT NULL,
    public_key     bytea       NOT NULL,
    payload_digest text        NOT NULL,
    signature      bytea       NOT NULL,
    tools          text[]      NOT NULL,
    size           bigint      NOT NULL,
    installed_by   text        NOT NULL,
    installed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT skill_artifacts_check CHECK (
        digest ~ '^sha256:[0-9a-f]{64}$' AND payload_digest ~ '^sha256:[0-9a-f]{64}$'
        AND octet_length(public_key) = 32 AND octet_length(signature) = 64
        AND cardinality(tools) BETWEEN 1 AND 64 AND size > 0)
);
COMMENT ON TABLE ledger.skill_artifacts IS 'Installed skill artifacts by archive digest; append-only.';

-- The artifact's files as they were in the archive, signature.json
-- included. The executor loads a skill's files from here at every call
-- and hashes them against payload_digest.
CREATE TABLE ledger.skill_files (
    artifact_digest text  NOT NULL REFERENCES ledger.skill_artifacts (digest),
    path            text  NOT NULL,
    content         bytea NOT NULL,
    CONSTRAINT skill_files_pkey PRIMARY KEY (artifact_digest, path),
    CONSTRAINT skill_files_check CHECK (octet_length(path) BETWEEN 1 AND 256 AND octet_length(content) <= 16777216)
);
COMMENT ON TABLE ledger.skill_files IS 'The files of each installed skill artifact; append-only.';

-- The trust store: publisher keys. A key is added by an operator or pinned
-- by the first install of its publisher's skill (trust on first use, when
-- the installer enables it); a revoked key stays revoked.
CREATE TABLE ledger.skill_trust_keys (
    key_id        text        PRIMARY KEY,
    publisher     text        NOT NULL,
    public_key    bytea       NOT NULL,
    source        text        NOT NULL,
    added_by      text        NOT NULL,
    added_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    revoked_at    timestamptz,
    revoked_by    text,
    revoke_reason text,
    CONSTRAINT skill_trust_keys_source_check CHECK (source IN ('operator', 'tofu')),
    CONSTRAINT skill_trust_keys_check CHECK (octet_length(public_key) = 32 AND publisher ~ '^[a-z0-9][a-z0-9_-]{0,63}$')
);
CREATE INDEX skill_trust_keys_publisher_idx ON ledger.skill_trust_keys (publisher);
COMMENT ON TABLE ledger.skill_trust_keys IS 'Trusted publisher keys (trust.key_added / trust.key_revoked); written by the skill functions only.';

-- The lifecycle's current state, one row per skill id ever installed:
-- the write side the skill functions lock and check. (ledger.skill_status
-- is the read model the projection engine builds from the events.)
-- cleared: the current artifact passed an audit or was approved by two
-- principals; only a cleared artifact may be enabled. previous_*: the
-- artifact a rollback returns to.
CREATE TABLE ledger.skills (
    skill_id         text        PRIMARY KEY,
    status           text        NOT NULL,
    artifact_digest  text        NOT NULL REFERENCES ledger.skill_artifacts (digest),
    cleared          boolean     NOT NULL DEFAULT false,
    approvals        text[]      NOT NULL DEFAULT '{}',
    failed_checks    jsonb,
    previous_digest  text        REFERENCES ledger.skill_artifacts (digest),
    previous_cleared boolean     NOT NULL DEFAULT false,
    stream_version   bigint      NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT skills_status_check CHECK (status IN
        ('installed', 'verified', 'quarantined', 'approved', 'enabled', 'disabled', 'removed'))
);
COMMENT ON TABLE ledger.skills IS 'Skill lifecycle state (write side), kept by the skill functions with the skill.* events.';

-- Which skill serves each tool id: the tools of each skill's current
-- artifact, none of a removed skill's.
CREATE TABLE ledger.skill_tools (
    tool_id  text PRIMARY KEY,
    skill_id text NOT NULL REFERENCES ledger.skills (skill_id)
);
CREATE INDEX skill_tools_skill_idx ON ledger.skill_tools (skill_id);
COMMENT ON TABLE ledger.skill_tools IS 'Tool id -> the skill whose current artifact serves it.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['skill_artifacts', 'skill_files'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON ledger.%I FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change()', t || '_append_only', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON ledger.%I FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change()', t || '_no_truncate', t);
        EXECUTE format('ALTER TABLE ledger.%I ENABLE ALWAYS TRIGGER %I', t, t || '_append_only');
        EXECUTE format('ALTER TABLE ledger.%I ENABLE ALWAYS TRIGGER %I', t, t || '_no_truncate');
    END LOOP;
END $$;

-- ---------------------------------------------------------------------
-- Helpers (executable by no role; the skill functions call them).

-- skill_actor is the calling principal, who must hold ledger_skill_admin.
CREATE FUNCTION ledger.skill_actor(p_op text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v text := ledger.current_principal();
BEGIN
    IF v IS NULL OR NOT pg_has_role(session_user, 'ledger_skill_admin', 'MEMBER') THEN
        RAISE EXCEPTION '%: login role "%" is not a skill admin (ledger_skill_admin, mapped in ledger.principals)', p_op, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v;
END $$;

-- skill_append appends one event to stream p_stream at the version after
-- p_version and returns that version.
CREATE FUNCTION ledger.skill_append(p_stream text, p_version bigint, p_type text, p_payload jsonb, p_actor text)
RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES (p_stream, p_version + 1, p_type, p_payload::json,
            json_build_object('actor', p_actor, 'login_role', session_user))
    RETURNING version;
$$;

-- skill_lock returns a skill's row, locked, or raises.
CREATE FUNCTION ledger.skill_lock(p_op text, p_skill_id text) RETURNS ledger.skills
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s ledger.skills;
BEGIN
    SELECT * INTO s FROM ledger.skills WHERE skill_id = p_skill_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: no skill %', p_op, p_skill_id USING ERRCODE = 'no_data_found';
    END IF;
    RETURN s;
END $$;

-- skill_set moves a locked skill to its new state, appends the event that
-- records it and returns the new stream version. The payload gets the
-- skill's resulting status, version and artifact.
CREATE FUNCTION ledger.skill_set(s ledger.skills, p_type text, p_payload jsonb, p_actor text) RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- skill_refuse records a refused request on an existing skill.
CREATE FUNCTION ledger.skill_refuse(s ledger.skills, p_action text, p_reason text, p_actor text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- skill_key_trusted reports whether key p_key_id is in the trust store
-- and not revoked.
CREATE FUNCTION ledger.skill_key_trusted(p_key_id text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM ledger.skill_trust_keys k WHERE k.key_id = p_key_id AND k.revoked_at IS NULL)
$$;

-- ---------------------------------------------------------------------
-- The lifecycle.
--
--   install ─> installed ─ audit passed ─> verified ─ enable ─> enabled
--                        └ audit failed ─> quarantined ─ 2 approvals ─> approved ─ enable ─> enabled
--   enabled | verified | approved | quarantined ─ disable ─> disabled ─ enable (cleared only) ─> enabled
--   any but enabled and removed ─ remove ─> removed;  any but removed ─ rollback ─> disabled (previous artifact)
--   a failed re-audit quarantines; a revoked publisher key disables.

CREATE TYPE ledger.skill_result AS (ok boolean, status text, message text);

-- skill_install records an artifact that `execledger skill install` has
-- opened and verified, and makes it the skill's current artifact in state
-- installed; its audit follows (skill_record_audit). The signing key must
-- be trusted, or, with p_tofu and no key yet known for the publisher,
-- is pinned now (trust.key_added, source tofu). Installing over an
-- existing skill keeps the artifact it replaces for rollback.
CREATE FUNCTION ledger.skill_install(
    p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea,
    p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint,
    p_paths text[], p_contents bytea[], p_tofu boolean DEFAULT false)
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
                               'source', 'tofu', 'skill_id', p_skill_id, 'actor', v_actor),
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
END $$;

-- skill_record_audit records an audit of the skill's current artifact
-- (p_digest must be it). A passing first audit verifies the skill; a
-- failing audit, first or later, quarantines it with every failed check.
-- Executors record the scheduled re-audits: they may quarantine a skill
-- but never clear one.
CREATE FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb,
                                          p_trigger text DEFAULT 'install')
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_executor boolean := pg_has_role(session_user, 'ledger_executor', 'MEMBER');
    v_actor    text;
    s          ledger.skills;
    v_failed   jsonb;
BEGIN
    IF v_executor AND NOT pg_has_role(session_user, 'ledger_skill_admin', 'MEMBER') THEN
        v_actor := coalesce(ledger.current_principal(), session_user);
    ELSE
        v_actor := ledger.skill_actor('ledger.skill_record_audit');
        v_executor := false;
    END IF;
    IF jsonb_typeof(p_checks) IS DISTINCT FROM 'array' OR p_trigger NOT IN ('install', 'schedule', 'trust_store', 'operator') THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: checks must be a JSON array and trigger one of install, schedule, trust_store, operator'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    s := ledger.skill_lock('ledger.skill_record_audit', p_skill_id);
    IF s.artifact_digest <> p_digest OR s.status = 'removed' THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: % is not skill %''s current artifact (it is % in state %)',
            p_digest, p_skill_id, s.artifact_digest, s.status USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF v_executor AND p_passed AND s.status IN ('installed', 'quarantined') THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: an executor may not clear skill % (%)', p_skill_id, s.status
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_failed := coalesce((SELECT jsonb_agg(c) FROM jsonb_array_elements(p_checks) c WHERE (c ->> 'passed')::boolean IS NOT TRUE), '[]');
    IF p_passed AND jsonb_array_length(v_failed) > 0 THEN
        RAISE EXCEPTION 'ledger.skill_record_audit: an audit with failed checks did not pass' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_passed THEN
        IF s.status = 'installed' THEN
            s.status := 'verified';
            s.cleared := true;
        END IF;
        s.failed_checks := NULL;
        PERFORM ledger.skill_set(s, 'skill.audited',
            jsonb_build_object('passed', true, 'checks', p_checks, 'failed_checks', '[]'::jsonb, 'trigger', p_trigger), v_actor);
        RETURN ROW(true, s.status, 'audit passed')::ledger.skill_result;
    END IF;
    s.failed_checks := v_failed;
    PERFORM ledger.skill_set(s, 'skill.audited',
        jsonb_build_object('passed', false, 'checks', p_checks, 'failed_checks', v_failed, 'trigger', p_trigger), v_actor);
    s := ledger.skill_lock('ledger.skill_record_audit', p_skill_id);
    s.status := 'quarantined';
    s.cleared := false;
    s.approvals := '{}';
    PERFORM ledger.skill_set(s, 'skill.quarantined',
        jsonb_build_object('failed_checks', v_failed, 'reason', 'audit failed', 'trigger', p_trigger), v_actor);
    RETURN ROW(true, 'quarantined', format('audit failed: %s check(s) failed; the skill is quarantined', jsonb_array_length(v_failed)))::ledger.skill_result;
END $$;

-- skill_approve records one approval of a quarantined skill's current
-- artifact (p_digest must be it: an approval is bound to the bytes the
-- approver reviewed). Two approvals by distinct principals, neither the
-- installer, clear it (state approved).
CREATE FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text DEFAULT NULL)
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- skill_enable makes a cleared skill active: its tools run.
CREATE FUNCTION ledger.skill_enable(p_skill_id text, p_note text DEFAULT NULL)
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- skill_disable stops a skill's tools from running.
CREATE FUNCTION ledger.skill_disable(p_skill_id text, p_reason text DEFAULT NULL)
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_disable');
    s       ledger.skills;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_disable', p_skill_id);
    IF s.status NOT IN ('enabled', 'verified', 'approved', 'quarantined') THEN
        v_why := format('skill %s is %s and cannot be disabled', p_skill_id, s.status);
        PERFORM ledger.skill_refuse(s, 'disable', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    s.status := 'disabled';
    PERFORM ledger.skill_set(s, 'skill.disabled', jsonb_build_object('reason', coalesce(p_reason, 'disabled by an operator')), v_actor);
    RETURN ROW(true, 'disabled', 'disabled ' || p_skill_id)::ledger.skill_result;
END $$;

-- skill_rollback makes the artifact the current one replaced current
-- again, disabled: an operator enables it (it keeps its clearance).
CREATE FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text DEFAULT NULL)
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_rollback');
    s       ledger.skills;
    v_from  text;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_rollback', p_skill_id);
    IF s.status = 'removed' OR s.previous_digest IS NULL THEN
        v_why := format('skill %s has no earlier artifact to roll back to', p_skill_id);
        PERFORM ledger.skill_refuse(s, 'rollback', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    v_from := s.artifact_digest;
    s.artifact_digest := s.previous_digest;
    s.cleared := s.previous_cleared;
    s.previous_digest := v_from;
    s.previous_cleared := false;
    s.status := 'disabled';
    s.approvals := '{}';
    s.failed_checks := NULL;
    DELETE FROM ledger.skill_tools WHERE skill_id = p_skill_id;
    INSERT INTO ledger.skill_tools (tool_id, skill_id)
    SELECT t, p_skill_id FROM ledger.skill_artifacts a, unnest(a.tools) t WHERE a.digest = s.artifact_digest;
    PERFORM ledger.skill_set(s, 'skill.rolled_back',
        jsonb_build_object('from_digest', v_from,
                           'from_version', (SELECT a.version FROM ledger.skill_artifacts a WHERE a.digest = v_from),
                           'reason', p_reason), v_actor);
    RETURN ROW(true, 'disabled', 'rolled back to the earlier artifact; enable it to run it')::ledger.skill_result;
END $$;

-- skill_remove retires a skill that is not enabled: its tools are gone.
CREATE FUNCTION ledger.skill_remove(p_skill_id text, p_reason text DEFAULT NULL)
RETURNS ledger.skill_result
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_actor text := ledger.skill_actor('ledger.skill_remove');
    s       ledger.skills;
    v_why   text;
BEGIN
    s := ledger.skill_lock('ledger.skill_remove', p_skill_id);
    IF s.status IN ('enabled', 'removed') THEN
        v_why := CASE s.status WHEN 'enabled' THEN format('skill %s is enabled: disable it first', p_skill_id)
                               ELSE format('skill %s is already removed', p_skill_id) END;
        PERFORM ledger.skill_refuse(s, 'remove', v_why, v_actor);
        RETURN ROW(false, s.status, v_why)::ledger.skill_result;
    END IF;
    s.status := 'removed';
    s.cleared := false;
    s.previous_digest := NULL;
    DELETE FROM ledger.skill_tools WHERE skill_id = p_skill_id;
    PERFORM ledger.skill_set(s, 'skill.removed', jsonb_build_object('reason', p_reason), v_actor);
    RETURN ROW(true, 'removed', 'removed ' || p_skill_id)::ledger.skill_result;
END $$;

-- skill_trust_add adds a publisher key to the trust store. A revoked key
-- cannot come back.
CREATE FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
                           'source', 'operator', 'note', p_note, 'actor', v_actor),
        v_actor);
END $$;

-- skill_trust_revoke revokes a key: every skill whose current artifact it
-- signed and that could run or be enabled is disabled, in the same
-- transaction. It returns how many skills it disabled.
CREATE FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text DEFAULT NULL)
RETURNS int
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- skill_history is a skill's stream (or the trust store's, 'trust') for
-- those who manage skills, who may not read the rest of the log.
CREATE FUNCTION ledger.skill_history(p_skill_id text)
RETURNS TABLE (version bigint, type text, payload text, actor text, recorded_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT e.version, e.type, e.payload::text, e.metadata::jsonb ->> 'actor', e.recorded_at
    FROM ledger.events e WHERE e.stream = 'skill:' || p_skill_id ORDER BY e.version
$$;

-- ---------------------------------------------------------------------
-- skill_status, the read model: rebuilt from the events, which carry the
-- status each change left the skill in. The trust store's own stream
-- (skill:trust) and the trust.key_added of a pinned key carry nothing for
-- it; skill.refused moves only stream_version.
CREATE OR REPLACE FUNCTION ledger.apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    e  record;
    n  bigint := 0;
    id text;
    p  jsonb;
BEGIN
    SELECT x.type, x.stream INTO e
    FROM ledger.events x
    WHERE (x.tx_id, x.position) > (p_from_tx, p_from_pos) AND (x.tx_id, x.position) <= (p_to_tx, p_to_pos)
      AND x.tx_id >= p_from_tx AND x.tx_id <= p_to_tx AND x.stream LIKE 'skill:%'
      AND x.type NOT IN ('skill.installed', 'skill.audited', 'skill.quarantined', 'skill.approved', 'skill.enabled',
                         'skill.disabled', 'skill.rolled_back', 'skill.removed', 'skill.refused',
                         'trust.key_added', 'trust.key_revoked')
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.apply_skill_status: unknown event type % on a skill stream (%)', e.type, e.stream
            USING ERRCODE = 'data_exception';
    END IF;
    FOR e IN
        SELECT x.* FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                   ARRAY['skill.installed', 'skill.audited', 'skill.quarantined', 'skill.approved', 'skill.enabled',
                         'skill.disabled', 'skill.rolled_back', 'skill.removed', 'skill.refused']) x
        WHERE x.stream LIKE 'skill:%' AND x.stream <> 'skill:trust'
        ORDER BY x.stream, x.version
    LOOP
        n := n + 1;
        id := substr(e.stream, 7);
        p := e.payload;
        IF e.type = 'skill.installed' THEN
            INSERT INTO skill_status AS s (skill_id, version, publisher, artifact_digest, status, installed_by, approvals,
                                           failed_checks, stream_version, installed_at, updated_at)
            VALUES (id, p ->> 'version', p ->> 'publisher', p ->> 'artifact_digest', coalesce(p ->> 'status', 'installed'),
                    coalesce(p ->> 'installed_by', e.metadata ->> 'actor'), '{}', NULL, e.version, e.recorded_at, e.recorded_at)
            ON CONFLICT (skill_id) DO UPDATE
            SET version = EXCLUDED.version, publisher = EXCLUDED.publisher, artifact_digest = EXCLUDED.artifact_digest,
                status = EXCLUDED.status, installed_by = EXCLUDED.installed_by, approvals = '{}', failed_checks = NULL,
                stream_version = EXCLUDED.stream_version, installed_at = EXCLUDED.installed_at, updated_at = EXCLUDED.updated_at;
            CONTINUE;
        END IF;
        UPDATE skill_status s
        -- Events written before 012 carry no status: the type says it.
        SET status = CASE WHEN e.type = 'skill.refused' THEN s.status
                          WHEN p ? 'status' THEN p ->> 'status'
                          ELSE CASE e.type
                                   WHEN 'skill.audited' THEN CASE WHEN (p ->> 'passed')::boolean THEN 'verified' ELSE 'quarantined' END
                                   WHEN 'skill.quarantined' THEN 'quarantined'
                                   WHEN 'skill.approved' THEN s.status
                                   WHEN 'skill.enabled' THEN 'enabled'
                                   WHEN 'skill.disabled' THEN 'disabled'
                                   WHEN 'skill.removed' THEN 'removed'
                                   ELSE s.status
                               END
                     END,
            version = CASE WHEN e.type = 'skill.refused' THEN s.version ELSE coalesce(p ->> 'version', s.version) END,
            publisher = CASE WHEN e.type = 'skill.refused' THEN s.publisher ELSE coalesce(p ->> 'publisher', s.publisher) END,
            artifact_digest = CASE WHEN e.type = 'skill.refused' THEN s.artifact_digest
                                   ELSE coalesce(p ->> 'artifact_digest', s.artifact_digest) END,
            approvals = CASE WHEN e.type <> 'skill.refused' AND jsonb_typeof(p -> 'approvals') = 'array'
                             THEN ARRAY(SELECT jsonb_array_elements_text(p -> 'approvals')) ELSE s.approvals END,
            failed_checks = CASE WHEN e.type IN ('skill.audited', 'skill.quarantined') THEN nullif(p -> 'failed_checks', '[]'::jsonb)
                                 WHEN e.type = 'skill.rolled_back' THEN NULL
                                 ELSE s.failed_checks END,
            stream_version = e.version,
            updated_at = e.recorded_at
        WHERE s.skill_id = id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'ledger.apply_skill_status: % on skill % before skill.installed', e.type, id
                USING ERRCODE = 'data_exception';
        END IF;
    END LOOP;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION ledger.apply_skill_status(xid8, bigint, xid8, bigint) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Privileges.

REVOKE ALL ON FUNCTION ledger.skill_actor(text), ledger.skill_append(text, bigint, text, jsonb, text),
    ledger.skill_lock(text, text), ledger.skill_set(ledger.skills, text, jsonb, text),
    ledger.skill_refuse(ledger.skills, text, text, text), ledger.skill_key_trusted(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION
    ledger.skill_install(text, text, text, text, text, bytea, text, bytea, text[], bigint, text[], bytea[], boolean),
    ledger.skill_record_audit(text, text, boolean, jsonb, text), ledger.skill_approve(text, text, text),
    ledger.skill_enable(text, text), ledger.skill_disable(text, text), ledger.skill_rollback(text, text),
    ledger.skill_remove(text, text), ledger.skill_trust_add(text, text, bytea, text), ledger.skill_trust_revoke(text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    ledger.skill_install(text, text, text, text, text, bytea, text, bytea, text[], bigint, text[], bytea[], boolean),
    ledger.skill_approve(text, text, text), ledger.skill_enable(text, text), ledger.skill_disable(text, text),
    ledger.skill_rollback(text, text), ledger.skill_remove(text, text), ledger.skill_trust_add(text, text, bytea, text),
    ledger.skill_trust_revoke(text, text)
    TO ledger_skill_admin;
GRANT EXECUTE ON FUNCTION ledger.skill_record_audit(text, text, boolean, jsonb, text) TO ledger_skill_admin, ledger_executor;
REVOKE ALL ON FUNCTION ledger.skill_history(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.skill_history(text) TO ledger_skill_admin, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_skill_admin;

REVOKE ALL ON ledger.skill_artifacts, ledger.skill_files, ledger.skill_trust_keys, ledger.skills, ledger.skill_tools FROM PUBLIC;
GRANT SELECT ON ledger.skill_artifacts, ledger.skill_files, ledger.skill_trust_keys, ledger.skills, ledger.skill_tools
    TO ledger_skill_admin, ledger_executor, ledger_auditor, ledger_admin;
GRANT SELECT ON ledger.skill_status TO ledger_skill_admin, ledger_auditor, ledger_admin;
