-- depends: projections/projection_read.sql
-- depends: projections/projection_types.sql

-- skill_status, the read model: rebuilt from the events, which carry the
-- status each change left the skill in. The trust store's own stream
-- (skill:trust) and the trust.key_added of a pinned key carry nothing for
-- it; skill.refused moves only stream_version. It takes the events of a
-- batch already read (projection_read), and picks its own;
-- skill_status_check has refused the batch first if a skill stream holds a
-- type it does not know.

-- skill_status_check refuses a range with an event on a skill stream of a
-- type skill_status does not know, rather than skip it.
CREATE OR REPLACE FUNCTION ledger.skill_status_check(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    e record;
BEGIN
    SELECT x.type, x.stream INTO e
    FROM ledger.events x
    WHERE (x.tx_id, x.position) > (p_from_tx, p_from_pos) AND (x.tx_id, x.position) <= (p_to_tx, p_to_pos)
      AND x.tx_id >= p_from_tx AND x.tx_id <= p_to_tx AND x.stream LIKE 'skill:%'
      AND x.type <> ALL(ledger.projection_types('skill_status') || ARRAY['trust.key_added', 'trust.key_revoked'])
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.apply_skill_status: unknown event type % on a skill stream (%)', e.type, e.stream
            USING ERRCODE = 'data_exception';
    END IF;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_status_check(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION ledger.apply_skill_status(p_events ledger.projected_event[]) RETURNS bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    e  record;
    n  bigint := 0;
    id text;
    p  jsonb;
BEGIN
    FOR e IN
        SELECT x.* FROM unnest(p_events) x
        WHERE x.type = ANY(ledger.projection_types('skill_status')) AND x.stream LIKE 'skill:%' AND x.stream <> 'skill:trust'
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

REVOKE ALL ON FUNCTION ledger.apply_skill_status(p_events ledger.projected_event[]) FROM PUBLIC;

-- The events of a range: checked, read once (projection_read), applied.
CREATE OR REPLACE FUNCTION ledger.apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM ledger.skill_status_check(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
    RETURN ledger.apply_skill_status(ledger.projection_read(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                            ledger.projection_types('skill_status')));
END $$;

REVOKE ALL ON FUNCTION ledger.apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;
