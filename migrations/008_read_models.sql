-- 008: every read model under the projection engine.
--
-- A read model is written only by its projection's apply function,
-- ledger.apply_<projection>(from, to): it reads the events of the log
-- between two read_all cursors, (from_tx, from_position) exclusive and
-- (to_tx, to_position) inclusive, from ledger.events itself, and writes
-- its tables set-based. It never takes event contents from its caller, so
-- whoever may call it can only make a read model agree with the log.
--
-- Inline projections (requests, runs, processes) are applied by the SQL
-- API and the executor functions in the transaction that appends the
-- events, over exactly those events, so ledger.requests stays
-- read-your-writes. Asynchronous ones (audit_trail, quota_usage,
-- skill_status) are applied by the engine (package projector) through
-- ledger.projection_step, which moves the checkpoint in the same call.
-- Rebuild and verify run the same apply functions into shadow or scratch
-- tables.
--
-- Plans. On the inline path each call applies a handful of events, and
-- the plan cache must keep a generic plan of each statement rather than
-- plan it at every call: the inline apply functions read their batch with
-- one plain statement chosen by an IF (events_in_tx or events_between).
-- The engine's apply functions run on force_generic_plan. (Measured on
-- submit's one event: 250 µs a call when every statement was planned
-- anew, 117 µs on generic plans, 104-110 µs without the GUC's save and
-- restore.)
--
-- Apply functions name their own tables unqualified: the live tables are
-- found through search_path pg_catalog, ledger, pg_temp, and a rebuild puts
-- its shadow schema before ledger (verify, pg_temp). PostgreSQL re-plans a
-- cached statement when search_path changes, so one function writes
-- either. Everything else they read is schema-qualified. They are
-- SECURITY INVOKER, executable by no role: only the ledger's own
-- functions call them, and those set search_path.

-- ---------------------------------------------------------------------
-- The asynchronous read models.

-- Audit trail: one row per decision (policy.decided, approval.granted,
-- approval.denied) and per outcome (the event that made the request
-- final), keyed by that event's position and the row's kind: a denial is
-- both.
CREATE TABLE ledger.audit_trail (
    position             bigint      NOT NULL,
    tx_id                xid8        NOT NULL,
    recorded_at          timestamptz NOT NULL,
    kind                 text        NOT NULL,
    event_type           text        NOT NULL,
    request_id           uuid        NOT NULL,
    principal            text        NOT NULL,
    tool                 text        NOT NULL,
    run_id               text,
    attempt              int,
    decision             text,       -- allow, deny, approval_requested, approved, denied
    stage                text,       -- the authorization stage that decided, or approval
    reason_code          text,
    determining_policies text[],
    policy_digest        text,
    approver             text,
    state                text,       -- outcome rows: the final state
    tier                 text,
    error_kind           text,
    resources            jsonb,      -- outcome rows: usage as the tier reported it
    output_bytes         bigint,
    attestation_digest   text,       -- outcome rows, once attestation.signed is applied
    attestation_position bigint,
    request_position     bigint      NOT NULL, -- of tool.requested
    PRIMARY KEY (position, kind),
    CONSTRAINT audit_trail_kind_check CHECK (kind IN ('decision', 'outcome'))
);
COMMENT ON TABLE ledger.audit_trail IS 'One row per authorization decision and per outcome; projection audit_trail.';
CREATE INDEX audit_trail_principal_time_idx ON ledger.audit_trail (principal, recorded_at);
CREATE INDEX audit_trail_time_idx ON ledger.audit_trail (recorded_at);
CREATE INDEX audit_trail_request_idx ON ledger.audit_trail (request_id, position);

-- Quota usage per principal, per (principal, run), denials by reason, and
-- per principal in minute, hour and day buckets. A call is counted allowed
-- when the authorization pipeline lets it run (policy.decided allow at
-- stage allow) and denied when it ends denied (policy.decided deny,
-- approval.denied); reason is the error kind. Usage comes from
-- execution.finished (resources fuel_used, cpu_ms, wall_ms; output bytes)
-- and egress.connection events.
CREATE TABLE ledger.quota_usage (
    principal          text        PRIMARY KEY,
    calls_requested    bigint      NOT NULL DEFAULT 0,
    calls_allowed      bigint      NOT NULL DEFAULT 0,
    calls_denied       bigint      NOT NULL DEFAULT 0,
    budget_exhausted   bigint      NOT NULL DEFAULT 0,
    calls_finished     bigint      NOT NULL DEFAULT 0,
    calls_failed       bigint      NOT NULL DEFAULT 0,
    fuel               bigint      NOT NULL DEFAULT 0,
    cpu_ms             bigint      NOT NULL DEFAULT 0,
    wall_ms            bigint      NOT NULL DEFAULT 0,
    output_bytes       bigint      NOT NULL DEFAULT 0,
    egress_connections bigint      NOT NULL DEFAULT 0,
    egress_refused     bigint      NOT NULL DEFAULT 0,
    egress_bytes       bigint      NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL
);
COMMENT ON TABLE ledger.quota_usage IS 'Calls and resource use per principal; projection quota_usage.';

CREATE TABLE ledger.quota_usage_runs (
    principal          text        NOT NULL,
    run_id             text        NOT NULL,
    budget_limit       int,        -- run.budget_set; NULL: the executor's default
    budget_used        int         NOT NULL DEFAULT 0,
    budget_remaining   int         GENERATED ALWAYS AS (greatest(budget_limit - budget_used, 0)) STORED,
    ended_at           timestamptz,
    calls_requested    bigint      NOT NULL DEFAULT 0,
    calls_allowed      bigint      NOT NULL DEFAULT 0,
    calls_denied       bigint      NOT NULL DEFAULT 0,
    budget_exhausted   bigint      NOT NULL DEFAULT 0,
    calls_finished     bigint      NOT NULL DEFAULT 0,
    calls_failed       bigint      NOT NULL DEFAULT 0,
    fuel               bigint      NOT NULL DEFAULT 0,
    cpu_ms             bigint      NOT NULL DEFAULT 0,
    wall_ms            bigint      NOT NULL DEFAULT 0,
    output_bytes       bigint      NOT NULL DEFAULT 0,
    egress_connections bigint      NOT NULL DEFAULT 0,
    egress_refused     bigint      NOT NULL DEFAULT 0,
    egress_bytes       bigint      NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (principal, run_id)
);
COMMENT ON TABLE ledger.quota_usage_runs IS 'Budget and use per (principal, run); projection quota_usage.';

CREATE TABLE ledger.quota_denials (
    principal text   NOT NULL,
    run_id    text   NOT NULL, -- '' for requests without a run
    reason    text   NOT NULL, -- the error kind
    denied    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (principal, run_id, reason)
);
COMMENT ON TABLE ledger.quota_denials IS 'Denied calls per principal, run and reason; projection quota_usage.';

CREATE TABLE ledger.quota_usage_buckets (
    principal          text        NOT NULL,
    bucket             text        NOT NULL,
    bucket_start       timestamptz NOT NULL,
    calls_allowed      bigint      NOT NULL DEFAULT 0,
    calls_denied       bigint      NOT NULL DEFAULT 0,
    fuel               bigint      NOT NULL DEFAULT 0,
    cpu_ms             bigint      NOT NULL DEFAULT 0,
    wall_ms            bigint      NOT NULL DEFAULT 0,
    output_bytes       bigint      NOT NULL DEFAULT 0,
    egress_connections bigint      NOT NULL DEFAULT 0,
    egress_bytes       bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (principal, bucket, bucket_start),
    CONSTRAINT quota_usage_buckets_bucket_check CHECK (bucket IN ('minute', 'hour', 'day'))
);
COMMENT ON TABLE ledger.quota_usage_buckets IS 'Use per principal in minute, hour and day buckets (UTC); projection quota_usage.';

-- Skill status: the table the skills' lifecycle events (skill.*) project
-- into, one row per skill id.
CREATE TABLE ledger.skill_status (
    skill_id        text        PRIMARY KEY,
    version         text,
    publisher       text,
    artifact_digest text,
    status          text        NOT NULL,
    installed_by    text,
    approvals       text[]      NOT NULL DEFAULT '{}', -- principals who approved the current artifact
    failed_checks   jsonb,
    stream_version  bigint      NOT NULL,
    installed_at    timestamptz,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT skill_status_status_check CHECK (status IN
        ('installed', 'verified', 'quarantined', 'approved', 'enabled', 'disabled', 'removed'))
);
COMMENT ON TABLE ledger.skill_status IS 'One row per skill: its lifecycle state; projection skill_status.';

-- ---------------------------------------------------------------------
-- Projections known to the ledger, and where rebuilds keep their shadow.

ALTER TABLE ledger.projections
    ADD COLUMN mode               text        NOT NULL DEFAULT 'async',
    ADD COLUMN tables             text[]      NOT NULL DEFAULT '{}',
    ADD COLUMN rebuild_tx_id      xid8,
    ADD COLUMN rebuild_position   bigint,
    ADD COLUMN rebuild_applied    bigint,
    ADD COLUMN rebuild_started_at timestamptz,
    ADD CONSTRAINT projections_mode_check CHECK (mode IN ('inline', 'async')),
    ADD CONSTRAINT projections_rebuild_check CHECK ((rebuild_tx_id IS NULL) = (rebuild_position IS NULL));
COMMENT ON COLUMN ledger.projections.mode IS 'inline: applied by the writers in their transactions; async: by the engine.';
COMMENT ON COLUMN ledger.projections.tables IS 'Tables in schema ledger the projection owns.';
COMMENT ON COLUMN ledger.projections.rebuild_tx_id IS 'A rebuild in progress: its cursor (with rebuild_position); shadow tables in schema ledger_rebuild.';

INSERT INTO ledger.projections (name, mode, tables) VALUES
    ('requests', 'inline', ARRAY['request_status']),
    ('runs', 'inline', ARRAY['runs']),
    ('processes', 'inline', ARRAY['processes']),
    ('audit_trail', 'async', ARRAY['audit_trail']),
    ('quota_usage', 'async', ARRAY['quota_usage', 'quota_usage_runs', 'quota_denials', 'quota_usage_buckets']),
    ('skill_status', 'async', ARRAY['skill_status'])
ON CONFLICT (name) DO UPDATE SET mode = EXCLUDED.mode, tables = EXCLUDED.tables;

-- Shadow tables of rebuilds in progress. Only the ledger's owner uses it.
CREATE SCHEMA IF NOT EXISTS ledger_rebuild;
REVOKE ALL ON SCHEMA ledger_rebuild FROM PUBLIC;

-- events_between is the batch an apply function reads: the events after
-- one read_all cursor up to and including another, of the given types,
-- with payload and metadata parsed once (jsonb): json's operators parse
-- the text again at every field taken. events_in_tx is the same for a
-- range inside one transaction, what an inline writer applies: an index
-- probe on tx_id and a position range, a few microseconds, where a row
-- comparison as the upper bound cannot stop the index scan (ten times as
-- much). The inline apply functions choose between them with an IF, each
-- a plain statement whose generic plan the plan cache keeps.
CREATE TYPE ledger.projected_event AS (
    tx_id xid8, "position" bigint, stream text, version bigint, type text, payload jsonb, metadata jsonb,
    recorded_at timestamptz
);
CREATE FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[])
RETURNS SETOF ledger.projected_event
LANGUAGE sql STABLE
AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
      AND e.tx_id >= p_from_tx AND e.tx_id <= p_to_tx AND e.type = ANY(p_types)
$$;
CREATE FUNCTION ledger.events_in_tx(p_tx xid8, p_from_pos bigint, p_to_pos bigint, p_types text[])
RETURNS SETOF ledger.projected_event
LANGUAGE sql STABLE
AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    WHERE e.tx_id = p_tx AND e.position > p_from_pos AND e.position <= p_to_pos AND e.type = ANY(p_types)
$$;

-- ---------------------------------------------------------------------
-- requests: ledger.request_status, from the request:<id> streams.
--
-- A final state (succeeded, failed, denied, cancelled) is sticky: the
-- first final event decides the outcome and finished_at, and nothing after
-- it changes them (the executor's request.cancelled that follows a
-- cancelled execution.finished, or an event of the same stream that
-- reached the log's order ahead of an earlier version). Before that the
-- newest state-changing event decides the state.
CREATE FUNCTION ledger.apply_requests(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v      ledger.projected_event[];
    n_req  int;
    n_ids  bigint;
    n_rows bigint;
    v_bad  text;
BEGIN
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events_in_tx(p_from_tx, p_from_pos, p_to_pos,
                       ARRAY['tool.requested', 'policy.decided', 'approval.requested', 'approval.granted', 'approval.denied',
                             'execution.started', 'execution.finished', 'request.cancelled', 'lease.expired',
                             'attestation.signed']) e
                   WHERE e.stream LIKE 'request:%'
                   ORDER BY e.position);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                       ARRAY['tool.requested', 'policy.decided', 'approval.requested', 'approval.granted', 'approval.denied',
                             'execution.started', 'execution.finished', 'request.cancelled', 'lease.expired',
                             'attestation.signed']) e
                   WHERE e.stream LIKE 'request:%'
                   ORDER BY e.tx_id, e.position);
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;
    SELECT count(*) FILTER (WHERE e.type = 'tool.requested') INTO n_req FROM unnest(v) e;

    -- (submit's call has only its tool.requested: it skips the rest.)
    IF n_req > 0 THEN
        INSERT INTO request_status (id, principal, tool, run_id, idempotency_key, input_digest, state, submitted_at)
        SELECT substr(e.stream, 9)::uuid, e.payload ->> 'principal', e.payload ->> 'tool', e.payload ->> 'run_id',
               e.payload ->> 'idempotency_key', decode(substr(e.payload ->> 'input_digest', 8), 'hex'), 'pending',
               e.recorded_at
        FROM unnest(v) e
        WHERE e.type = 'tool.requested'
        ORDER BY e.position;
    END IF;
    IF n_req = cardinality(v) THEN
        RETURN n_req;
    END IF;

    WITH ch AS MATERIALIZED (
        SELECT substr(e.stream, 9)::uuid AS id, e.version, e.recorded_at, x.state,
               x.state IN ('succeeded', 'failed', 'denied', 'cancelled') AS final,
               x.error_kind, x.error, x.output, x.tier,
               CASE WHEN e.type = 'attestation.signed' THEN e.payload ->> 'attestation_digest' END AS attestation
        FROM unnest(v) e
        CROSS JOIN LATERAL (
            SELECT CASE e.type
                       WHEN 'policy.decided' THEN CASE WHEN e.payload ->> 'decision' = 'deny' THEN 'denied' END
                       WHEN 'approval.requested' THEN 'awaiting_approval'
                       WHEN 'approval.granted' THEN 'pending'
                       WHEN 'approval.denied' THEN 'denied'
                       WHEN 'execution.started' THEN 'running'
                       WHEN 'execution.finished' THEN e.payload ->> 'state'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN CASE e.payload ->> 'action' WHEN 'requeued' THEN 'pending'
                                                                             WHEN 'cancelled' THEN 'cancelled'
                                                                             ELSE 'failed' END
                   END AS state,
                   CASE e.type
                       WHEN 'policy.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'approval.denied' THEN 'approval_denied'
                       WHEN 'execution.finished' THEN e.payload ->> 'error_kind'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN coalesce(e.payload ->> 'error_kind',
                           CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'outcome_unknown' END)
                   END AS error_kind,
                   CASE e.type
                       WHEN 'policy.decided' THEN e.payload ->> 'message'
                       WHEN 'approval.denied' THEN coalesce(e.payload ->> 'error',
                           CASE WHEN e.payload ->> 'approver' IS NOT NULL
                                THEN 'approval denied by ' || (e.payload ->> 'approver') || coalesce(': ' || (e.payload ->> 'note'), '')
                                ELSE 'no approval within ' || coalesce(e.payload ->> 'timeout_ms', '?') || ' ms' END)
                       WHEN 'execution.finished' THEN e.payload ->> 'error'
                       WHEN 'request.cancelled' THEN 'cancelled by ' || coalesce(e.metadata ->> 'actor', 'unknown')
                                                     || coalesce(': ' || (e.payload ->> 'reason'), '')
                       WHEN 'lease.expired' THEN e.payload ->> 'error'
                   END AS error,
                   CASE WHEN e.type = 'execution.finished' THEN nullif((e.payload -> 'output')::jsonb, 'null'::jsonb) END AS output,
                   CASE WHEN e.type IN ('execution.finished', 'lease.expired') THEN e.payload ->> 'tier' END AS tier
        ) x
        WHERE e.type <> 'tool.requested'
    ), ids AS (
        SELECT DISTINCT id FROM ch
    ), fin AS (
        SELECT DISTINCT ON (id) id, state, error_kind, error, output, tier, recorded_at
        FROM ch WHERE final ORDER BY id, version
    ), cur AS (
        SELECT DISTINCT ON (id) id, state FROM ch WHERE state IS NOT NULL AND NOT final ORDER BY id, version DESC
    ), att AS (
        SELECT DISTINCT ON (id) id, attestation FROM ch WHERE attestation IS NOT NULL ORDER BY id, version DESC
    ), upd AS (
        UPDATE request_status r
        SET state = CASE WHEN r.finished_at IS NOT NULL THEN r.state
                         WHEN fin.id IS NOT NULL THEN fin.state
                         ELSE coalesce(cur.state, r.state) END,
            error_kind = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.error_kind ELSE r.error_kind END,
            error = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.error ELSE r.error END,
            output = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.output ELSE r.output END,
            tier = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.tier ELSE r.tier END,
            finished_at = coalesce(r.finished_at, fin.recorded_at),
            attestation_digest = coalesce(att.attestation, r.attestation_digest)
        FROM ids LEFT JOIN fin USING (id) LEFT JOIN cur USING (id) LEFT JOIN att USING (id)
        WHERE r.id = ids.id
        RETURNING r.id
    )
    SELECT (SELECT count(*) FROM ids), (SELECT count(*) FROM upd),
           (SELECT min(ids.id::text) FROM ids WHERE ids.id NOT IN (SELECT upd.id FROM upd))
    INTO n_ids, n_rows, v_bad;
    IF n_rows <> n_ids THEN
        RAISE EXCEPTION 'ledger.apply_requests: request % has events but no tool.requested before them', v_bad
            USING ERRCODE = 'data_exception';
    END IF;
    RETURN cardinality(v);
END $$;

-- ---------------------------------------------------------------------
-- runs: ledger.runs (budgets), from run:<principal>/<run_id> streams
-- (run.budget_set, run.ended) and budget.consumed. The principal and run
-- of a budget.consumed are its request's, read from tool.requested, never
-- from the event itself.
CREATE FUNCTION ledger.apply_runs(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    n bigint;
    v ledger.projected_event[];
BEGIN
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events_in_tx(p_from_tx, p_from_pos, p_to_pos,
                                                     ARRAY['run.budget_set', 'run.ended', 'budget.consumed']) e);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                       ARRAY['run.budget_set', 'run.ended', 'budget.consumed']) e);
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;
    WITH ev AS MATERIALIZED (
        SELECT e.type, e.version, e.recorded_at,
               CASE WHEN e.type = 'budget.consumed' THEN r.payload ->> 'principal' ELSE e.payload ->> 'principal' END AS principal,
               CASE WHEN e.type = 'budget.consumed' THEN r.payload ->> 'run_id' ELSE e.payload ->> 'run_id' END AS run_id,
               (e.payload ->> 'max_calls')::int AS max_calls
        FROM unnest(v) e
        LEFT JOIN ledger.events r ON e.type = 'budget.consumed' AND r.stream = e.stream AND r.version = 1
        WHERE (e.type = 'budget.consumed' AND e.stream LIKE 'request:%')
           OR (e.type <> 'budget.consumed' AND e.stream = 'run:' || (e.payload ->> 'principal') || '/' || (e.payload ->> 'run_id'))
    ), agg AS (
        SELECT principal, run_id,
               (array_agg(max_calls ORDER BY version DESC) FILTER (WHERE type = 'run.budget_set'))[1] AS max_calls,
               count(*) FILTER (WHERE type = 'budget.consumed') AS used,
               coalesce(max(version) FILTER (WHERE type <> 'budget.consumed'), 0) AS version,
               min(recorded_at) AS created_at,
               min(recorded_at) FILTER (WHERE type = 'run.ended') AS ended_at,
               count(*) AS events
        FROM ev WHERE principal IS NOT NULL AND run_id IS NOT NULL
        GROUP BY principal, run_id
    ), up AS (
        INSERT INTO runs AS x (principal, run_id, max_calls, used, version, created_at, ended_at)
        SELECT principal, run_id, max_calls, used, version, created_at, ended_at FROM agg
        ORDER BY principal, run_id
        ON CONFLICT (principal, run_id) DO UPDATE
        SET max_calls = coalesce(EXCLUDED.max_calls, x.max_calls),
            used = x.used + EXCLUDED.used,
            version = greatest(x.version, EXCLUDED.version),
            created_at = least(x.created_at, EXCLUDED.created_at),
            ended_at = coalesce(least(x.ended_at, EXCLUDED.ended_at), x.ended_at, EXCLUDED.ended_at)
        RETURNING 1
    )
    SELECT coalesce(sum(agg.events), 0) + 0 * (SELECT count(*) FROM up) INTO n FROM agg;
    RETURN n;
END $$;

-- ---------------------------------------------------------------------
-- audit_trail: decisions and outcomes, with the request's principal, tool
-- and run from its tool.requested.
CREATE FUNCTION ledger.apply_audit_trail(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v ledger.projected_event[];
BEGIN
    v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                   ARRAY['policy.decided', 'approval.granted', 'approval.denied', 'execution.finished',
                         'request.cancelled', 'lease.expired', 'attestation.signed']) e
               WHERE e.stream LIKE 'request:%'
               ORDER BY e.tx_id, e.position);
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;

    INSERT INTO audit_trail (position, tx_id, recorded_at, kind, event_type, request_id, principal, tool, run_id, attempt,
                             decision, stage, reason_code, determining_policies, policy_digest, approver, state, tier,
                             error_kind, resources, output_bytes, request_position)
    SELECT e.position, e.tx_id, e.recorded_at, k.kind, e.type, substr(e.stream, 9)::uuid,
           r.payload ->> 'principal', r.payload ->> 'tool', r.payload ->> 'run_id', (e.payload ->> 'attempt')::int,
           CASE WHEN k.kind = 'decision' THEN
               CASE e.type WHEN 'policy.decided' THEN e.payload ->> 'decision'
                           WHEN 'approval.granted' THEN 'approved'
                           WHEN 'approval.denied' THEN 'denied' END END,
           CASE WHEN e.type = 'policy.decided' THEN e.payload ->> 'stage'
                WHEN e.type LIKE 'approval.%' THEN 'approval' END,
           CASE WHEN e.type IN ('policy.decided', 'approval.granted', 'approval.denied') THEN e.payload ->> 'reason_code' END,
           CASE WHEN e.type = 'policy.decided' AND jsonb_typeof(e.payload -> 'determining_policies') = 'array'
                THEN ARRAY(SELECT jsonb_array_elements_text(e.payload -> 'determining_policies')) END,
           CASE WHEN e.type = 'policy.decided' THEN e.payload ->> 'policy_digest' END,
           CASE WHEN e.type LIKE 'approval.%' THEN e.payload ->> 'approver' END,
           CASE WHEN k.kind = 'outcome' THEN
               CASE e.type WHEN 'execution.finished' THEN e.payload ->> 'state'
                           WHEN 'lease.expired' THEN CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END
                           WHEN 'request.cancelled' THEN 'cancelled'
                           ELSE 'denied' END END,
           CASE WHEN e.type IN ('execution.finished', 'lease.expired') THEN e.payload ->> 'tier' END,
           CASE e.type WHEN 'policy.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'approval.denied' THEN 'approval_denied'
                       WHEN 'execution.finished' THEN e.payload ->> 'error_kind'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN coalesce(e.payload ->> 'error_kind',
                           CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'outcome_unknown' END) END,
           CASE WHEN e.type = 'execution.finished' AND jsonb_typeof(e.payload -> 'resources') = 'object'
                THEN (e.payload -> 'resources')::jsonb END,
           CASE WHEN e.type = 'execution.finished' AND jsonb_typeof(e.payload -> 'output') IS DISTINCT FROM 'null'
                THEN octet_length((e.payload -> 'output')::text) END,
           r.position
    FROM unnest(v) e
    -- A stream without its tool.requested leaves principal NULL: the
    -- insert fails, naming the column, rather than skip the event.
    LEFT JOIN ledger.events r ON r.stream = e.stream AND r.version = 1 AND r.type = 'tool.requested'
    CROSS JOIN LATERAL (
        SELECT 'decision' AS kind WHERE e.type IN ('policy.decided', 'approval.granted', 'approval.denied')
        UNION ALL
        SELECT 'outcome' WHERE e.type IN ('execution.finished', 'approval.denied')
            OR (e.type = 'policy.decided' AND e.payload ->> 'decision' = 'deny')
            OR (e.type = 'lease.expired' AND e.payload ->> 'action' <> 'requeued')
            OR (e.type = 'request.cancelled' AND e.payload ->> 'previous_state' IS DISTINCT FROM 'running')
    ) k
    ORDER BY e.position, k.kind;

    -- An attestation belongs to its request's outcome.
    UPDATE audit_trail a
    SET attestation_digest = s.digest, attestation_position = s.position
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS request_id, e.payload ->> 'attestation_digest' AS digest, e.position
          FROM unnest(v) e WHERE e.type = 'attestation.signed'
          ORDER BY e.stream, e.version DESC) s
    WHERE a.request_id = s.request_id AND a.kind = 'outcome';
    RETURN cardinality(v);
END $$;

-- ---------------------------------------------------------------------
-- quota_usage: calls and resource use per principal, run, reason and time
-- bucket. A request's principal and run come from its tool.requested; a
-- background process's from its process.started.
CREATE TYPE ledger.quota_fact AS (
    principal text, run_id text, recorded_at timestamptz, reason text,
    requested int, allowed int, denied int, exhausted int, finished int, failed int,
    fuel bigint, cpu_ms bigint, wall_ms bigint, output_bytes bigint, conns int, refused int, egress_bytes bigint,
    budget_limit int, budget_used int, ended_at timestamptz, version bigint, run_event boolean
);
CREATE FUNCTION ledger.apply_quota_usage(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    n bigint;
    f ledger.quota_fact[];
BEGIN
    f := ARRAY(
    SELECT ROW(coalesce(o.payload ->> 'principal', e.payload ->> 'principal'),
           coalesce(o.payload ->> 'run_id', e.payload ->> 'run_id'),
           e.recorded_at,
           CASE WHEN e.type = 'policy.decided' AND e.payload ->> 'decision' = 'deny' THEN coalesce(e.payload ->> 'error_kind', 'policy_denied')
                WHEN e.type = 'approval.denied' THEN 'approval_denied' END,
           (e.type = 'tool.requested')::int,
           (e.type = 'policy.decided' AND e.payload ->> 'decision' = 'allow' AND e.payload ->> 'stage' = 'allow')::int,
           ((e.type = 'policy.decided' AND e.payload ->> 'decision' = 'deny') OR e.type = 'approval.denied')::int,
           (e.type = 'policy.decided' AND e.payload ->> 'decision' = 'deny' AND e.payload ->> 'error_kind' = 'budget_exhausted')::int,
           (e.type = 'execution.finished')::int,
           (e.type = 'execution.finished' AND e.payload ->> 'state' IS DISTINCT FROM 'succeeded')::int,
           CASE WHEN e.type = 'execution.finished' THEN coalesce((e.payload -> 'resources' ->> 'fuel_used')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type = 'execution.finished' THEN coalesce((e.payload -> 'resources' ->> 'cpu_ms')::bigint,
               coalesce((e.payload -> 'resources' ->> 'cpu_user_ms')::bigint, 0) + coalesce((e.payload -> 'resources' ->> 'cpu_sys_ms')::bigint, 0)) ELSE 0 END,
           CASE WHEN e.type = 'execution.finished' THEN coalesce((e.payload -> 'resources' ->> 'wall_ms')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type = 'execution.finished' AND jsonb_typeof(e.payload -> 'output') IS DISTINCT FROM 'null'
                THEN octet_length((e.payload -> 'output')::text) ELSE 0 END,
           (e.type = 'egress.connection' AND (e.payload ->> 'allowed')::boolean)::int,
           (e.type = 'egress.connection' AND NOT (e.payload ->> 'allowed')::boolean)::int,
           CASE WHEN e.type = 'egress.connection' THEN coalesce((e.payload ->> 'bytes_up')::bigint, 0) + coalesce((e.payload ->> 'bytes_down')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type = 'run.budget_set' THEN (e.payload ->> 'max_calls')::int END,
           (e.type = 'budget.consumed')::int,
           CASE WHEN e.type = 'run.ended' THEN e.recorded_at END,
           e.version,
           e.type IN ('run.budget_set', 'run.ended'))::ledger.quota_fact
    FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                               ARRAY['tool.requested', 'policy.decided', 'approval.denied', 'execution.finished',
                                     'egress.connection', 'run.budget_set', 'run.ended', 'budget.consumed']) e
    LEFT JOIN ledger.events o
           ON o.version = 1 AND o.stream = e.stream AND e.type IN ('policy.decided', 'approval.denied', 'execution.finished',
                                                                   'egress.connection', 'budget.consumed')
              AND (e.stream LIKE 'request:%' OR e.stream LIKE 'process:%')
    WHERE e.type IN ('tool.requested', 'run.budget_set', 'run.ended') OR o.stream IS NOT NULL);
    n := cardinality(f);
    IF n = 0 THEN
        RETURN 0;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(f) x WHERE x.principal IS NULL) THEN
        RAISE EXCEPTION 'ledger.apply_quota_usage: an event names no principal, nor does its stream''s first event'
            USING ERRCODE = 'data_exception';
    END IF;

    INSERT INTO quota_usage AS q (principal, calls_requested, calls_allowed, calls_denied, budget_exhausted, calls_finished,
                                  calls_failed, fuel, cpu_ms, wall_ms, output_bytes, egress_connections, egress_refused,
                                  egress_bytes, updated_at)
    SELECT principal, sum(requested), sum(allowed), sum(denied), sum(exhausted), sum(finished), sum(failed), sum(fuel),
           sum(cpu_ms), sum(wall_ms), sum(output_bytes), sum(conns), sum(refused), sum(egress_bytes), max(recorded_at)
    FROM unnest(f) WHERE NOT run_event AND budget_used = 0
    GROUP BY principal ORDER BY principal
    ON CONFLICT (principal) DO UPDATE
    SET calls_requested = q.calls_requested + EXCLUDED.calls_requested, calls_allowed = q.calls_allowed + EXCLUDED.calls_allowed,
        calls_denied = q.calls_denied + EXCLUDED.calls_denied, budget_exhausted = q.budget_exhausted + EXCLUDED.budget_exhausted,
        calls_finished = q.calls_finished + EXCLUDED.calls_finished, calls_failed = q.calls_failed + EXCLUDED.calls_failed,
        fuel = q.fuel + EXCLUDED.fuel, cpu_ms = q.cpu_ms + EXCLUDED.cpu_ms, wall_ms = q.wall_ms + EXCLUDED.wall_ms,
        output_bytes = q.output_bytes + EXCLUDED.output_bytes,
        egress_connections = q.egress_connections + EXCLUDED.egress_connections,
        egress_refused = q.egress_refused + EXCLUDED.egress_refused, egress_bytes = q.egress_bytes + EXCLUDED.egress_bytes,
        updated_at = greatest(q.updated_at, EXCLUDED.updated_at);

    INSERT INTO quota_usage_runs AS q (principal, run_id, budget_limit, budget_used, ended_at, calls_requested, calls_allowed,
                                       calls_denied, budget_exhausted, calls_finished, calls_failed, fuel, cpu_ms, wall_ms,
                                       output_bytes, egress_connections, egress_refused, egress_bytes, updated_at)
    SELECT principal, run_id, (array_agg(budget_limit ORDER BY version DESC) FILTER (WHERE budget_limit IS NOT NULL))[1],
           sum(budget_used), min(ended_at), sum(requested), sum(allowed), sum(denied), sum(exhausted), sum(finished),
           sum(failed), sum(fuel), sum(cpu_ms), sum(wall_ms), sum(output_bytes), sum(conns), sum(refused), sum(egress_bytes),
           max(recorded_at)
    FROM unnest(f) WHERE run_id IS NOT NULL
    GROUP BY principal, run_id ORDER BY principal, run_id
    ON CONFLICT (principal, run_id) DO UPDATE
    SET budget_limit = coalesce(EXCLUDED.budget_limit, q.budget_limit), budget_used = q.budget_used + EXCLUDED.budget_used,
        ended_at = coalesce(least(q.ended_at, EXCLUDED.ended_at), q.ended_at, EXCLUDED.ended_at),
        calls_requested = q.calls_requested + EXCLUDED.calls_requested, calls_allowed = q.calls_allowed + EXCLUDED.calls_allowed,
        calls_denied = q.calls_denied + EXCLUDED.calls_denied, budget_exhausted = q.budget_exhausted + EXCLUDED.budget_exhausted,
        calls_finished = q.calls_finished + EXCLUDED.calls_finished, calls_failed = q.calls_failed + EXCLUDED.calls_failed,
        fuel = q.fuel + EXCLUDED.fuel, cpu_ms = q.cpu_ms + EXCLUDED.cpu_ms, wall_ms = q.wall_ms + EXCLUDED.wall_ms,
        output_bytes = q.output_bytes + EXCLUDED.output_bytes,
        egress_connections = q.egress_connections + EXCLUDED.egress_connections,
        egress_refused = q.egress_refused + EXCLUDED.egress_refused, egress_bytes = q.egress_bytes + EXCLUDED.egress_bytes,
        updated_at = greatest(q.updated_at, EXCLUDED.updated_at);

    INSERT INTO quota_denials AS q (principal, run_id, reason, denied)
    SELECT principal, coalesce(run_id, ''), reason, sum(denied)
    FROM unnest(f) WHERE denied > 0
    GROUP BY principal, coalesce(run_id, ''), reason ORDER BY 1, 2, 3
    ON CONFLICT (principal, run_id, reason) DO UPDATE SET denied = q.denied + EXCLUDED.denied;

    INSERT INTO quota_usage_buckets AS q (principal, bucket, bucket_start, calls_allowed, calls_denied, fuel, cpu_ms, wall_ms,
                                          output_bytes, egress_connections, egress_bytes)
    SELECT f.principal, b.bucket, date_trunc(b.bucket, f.recorded_at, 'UTC'), sum(allowed), sum(denied), sum(fuel),
           sum(cpu_ms), sum(wall_ms), sum(output_bytes), sum(conns), sum(egress_bytes)
    FROM unnest(f) f CROSS JOIN unnest(ARRAY['minute', 'hour', 'day']) AS b(bucket)
    WHERE allowed + denied + finished + conns + refused > 0
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (principal, bucket, bucket_start) DO UPDATE
    SET calls_allowed = q.calls_allowed + EXCLUDED.calls_allowed, calls_denied = q.calls_denied + EXCLUDED.calls_denied,
        fuel = q.fuel + EXCLUDED.fuel, cpu_ms = q.cpu_ms + EXCLUDED.cpu_ms, wall_ms = q.wall_ms + EXCLUDED.wall_ms,
        output_bytes = q.output_bytes + EXCLUDED.output_bytes,
        egress_connections = q.egress_connections + EXCLUDED.egress_connections, egress_bytes = q.egress_bytes + EXCLUDED.egress_bytes;
    RETURN n;
END $$;

-- ---------------------------------------------------------------------
-- skill_status: one row per skill from the skill:<id> streams. The
-- lifecycle's rules are enforced where the events are written (the skills
-- commands); this applies what was recorded. Skill events are rare, so
-- they are applied one by one, in stream order.
CREATE FUNCTION ledger.apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    e  record;
    n  bigint := 0;
    id text;
BEGIN
    -- The skill:<id> streams are this projection's: a type it does not
    -- know there is a failure, not something to pass over.
    SELECT x.type, x.position INTO e
    FROM ledger.events x
    WHERE (x.tx_id, x.position) > (p_from_tx, p_from_pos) AND (x.tx_id, x.position) <= (p_to_tx, p_to_pos)
      AND x.tx_id >= p_from_tx AND x.tx_id <= p_to_tx AND x.stream LIKE 'skill:%'
      AND x.type NOT IN ('skill.installed', 'skill.audited', 'skill.quarantined', 'skill.approved', 'skill.enabled',
                         'skill.disabled', 'skill.rolled_back', 'skill.removed')
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.apply_skill_status: unknown event type % on a skill stream', e.type
            USING ERRCODE = 'data_exception';
    END IF;
    FOR e IN
        SELECT x.* FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                   ARRAY['skill.installed', 'skill.audited', 'skill.quarantined', 'skill.approved', 'skill.enabled',
                         'skill.disabled', 'skill.rolled_back', 'skill.removed']) x
        WHERE x.stream LIKE 'skill:%'
        ORDER BY x.stream, x.version
    LOOP
        n := n + 1;
        id := substr(e.stream, 7);
        IF e.type = 'skill.installed' THEN
            INSERT INTO skill_status AS s (skill_id, version, publisher, artifact_digest, status, installed_by, approvals,
                                           failed_checks, stream_version, installed_at, updated_at)
            VALUES (id, e.payload ->> 'version', e.payload ->> 'publisher', e.payload ->> 'artifact_digest', 'installed',
                    coalesce(e.payload ->> 'installed_by', e.metadata ->> 'actor'), '{}', NULL, e.version, e.recorded_at, e.recorded_at)
            ON CONFLICT (skill_id) DO UPDATE
            SET version = EXCLUDED.version, publisher = EXCLUDED.publisher, artifact_digest = EXCLUDED.artifact_digest,
                status = 'installed', installed_by = EXCLUDED.installed_by, approvals = '{}', failed_checks = NULL,
                stream_version = EXCLUDED.stream_version, installed_at = EXCLUDED.installed_at, updated_at = EXCLUDED.updated_at;
            CONTINUE;
        END IF;
        UPDATE skill_status s
        SET status = CASE e.type
                         WHEN 'skill.audited' THEN CASE WHEN (e.payload ->> 'passed')::boolean THEN 'verified' ELSE 'quarantined' END
                         WHEN 'skill.quarantined' THEN 'quarantined'
                         WHEN 'skill.approved' THEN
                             CASE WHEN s.status = 'quarantined'
                                       AND cardinality(ARRAY(SELECT DISTINCT a FROM unnest(s.approvals || (e.payload ->> 'approver')) a
                                                             WHERE a IS NOT NULL)) >= 2
                                  THEN 'approved' ELSE s.status END
                         WHEN 'skill.enabled' THEN 'enabled'
                         WHEN 'skill.disabled' THEN 'disabled'
                         WHEN 'skill.rolled_back' THEN coalesce(e.payload ->> 'status', s.status)
                         WHEN 'skill.removed' THEN 'removed'
                     END,
            approvals = CASE WHEN e.type = 'skill.approved' AND e.payload ->> 'approver' IS NOT NULL
                                  AND NOT (e.payload ->> 'approver') = ANY(s.approvals)
                             THEN s.approvals || (e.payload ->> 'approver') ELSE s.approvals END,
            failed_checks = CASE WHEN e.type IN ('skill.audited', 'skill.quarantined') AND e.payload -> 'failed_checks' IS NOT NULL
                                 THEN (e.payload -> 'failed_checks')::jsonb ELSE s.failed_checks END,
            version = CASE WHEN e.type = 'skill.rolled_back' THEN coalesce(e.payload ->> 'version', s.version) ELSE s.version END,
            artifact_digest = CASE WHEN e.type = 'skill.rolled_back' THEN coalesce(e.payload ->> 'artifact_digest', s.artifact_digest)
                                   ELSE s.artifact_digest END,
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

-- ---------------------------------------------------------------------
-- The engine's entry points.

-- projection_apply applies projection p_name's events in a range to
-- whichever tables search_path finds first.
CREATE FUNCTION ledger.projection_apply(p_name text, p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
BEGIN
    CASE p_name
        WHEN 'requests' THEN RETURN ledger.apply_requests(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
        WHEN 'runs' THEN RETURN ledger.apply_runs(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
        WHEN 'processes' THEN RETURN ledger.apply_processes(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
        WHEN 'audit_trail' THEN RETURN ledger.apply_audit_trail(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
        WHEN 'quota_usage' THEN RETURN ledger.apply_quota_usage(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
        WHEN 'skill_status' THEN RETURN ledger.apply_skill_status(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
        ELSE RAISE EXCEPTION 'ledger: no projection %', p_name USING ERRCODE = 'undefined_object';
    END CASE;
END $$;

-- projection_event records an event of a projection's own stream.
CREATE FUNCTION ledger.projection_event(p_name text, p_type text, p_payload json) RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            p_type, p_payload, json_build_object('actor', session_user, 'login_role', session_user));
$$;

-- projection_step applies an asynchronous projection's next events, up
-- to p_max of those read_all can deliver after the checkpoint the caller
-- read, and moves the checkpoint past them, in the caller's transaction:
-- the apply and the move commit together. The checkpoint must still be
-- where the caller read it (else serialization_failure: another runner
-- moved it). It returns the new checkpoint, the events passed and those
-- the apply function consumed; no row when there is nothing to deliver.
CREATE FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max int)
RETURNS TABLE (tx_id text, "position" bigint, passed bigint, applied bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_horizon xid8 := pg_snapshot_xmin(pg_current_snapshot());
    v_mode    text;
    v_to      record;
    n         bigint;
BEGIN
    IF p_max IS NULL OR p_max < 1 THEN
        RAISE EXCEPTION 'ledger.projection_step: p_max must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT p.mode INTO v_mode FROM ledger.projections p WHERE p.name = p_name;
    IF v_mode IS DISTINCT FROM 'async' THEN
        RAISE EXCEPTION 'ledger.projection_step: % is not an asynchronous projection', p_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT e.tx_id, e.position, e.n INTO v_to
    FROM (SELECT e.tx_id, e.position, row_number() OVER (ORDER BY e.tx_id, e.position) AS n FROM ledger.events e
          WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND e.tx_id < v_horizon
          ORDER BY e.tx_id, e.position LIMIT p_max) e
    ORDER BY e.n DESC LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- The move first: it locks the checkpoint row, so two runners never
    -- apply the same events at once.
    UPDATE ledger.projections x
    SET tx_id = v_to.tx_id, position = v_to.position, updated_at = clock_timestamp()
    WHERE x.name = p_name AND x.state = 'active' AND x.tx_id = p_from_tx AND x.position = p_from_pos;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_step: % is not active at (%, %)', p_name, p_from_tx, p_from_pos
            USING ERRCODE = 'serialization_failure';
    END IF;
    n := ledger.projection_apply(p_name, p_from_tx, p_from_pos, v_to.tx_id, v_to.position);
    UPDATE ledger.projections x SET applied_total = x.applied_total + n WHERE x.name = p_name;
    RETURN QUERY SELECT v_to.tx_id::text, v_to.position, v_to.n, n;
END $$;

-- projection_advance moves the checkpoint of a projection whose apply
-- functions are the caller's (Go ones, applied in the caller's
-- transaction). The ledger's own read models move only through
-- projection_step and a rebuild's swap, which apply what they pass:
-- moving theirs by hand would skip events.
CREATE OR REPLACE FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint,
                                                     p_to_tx xid8, p_to_position bigint, p_applied bigint)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM ledger.projections p WHERE p.name = p_name AND cardinality(p.tables) > 0) THEN
        RAISE EXCEPTION 'ledger.projection_advance: % is one of the ledger''s read models; ledger.projection_step moves it', p_name
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (p_to_tx, p_to_position) <= (p_from_tx, p_from_position) OR p_applied < 0 THEN
        RAISE EXCEPTION 'ledger.projection_advance: % must move forward, from (%, %) to (%, %)',
            p_name, p_from_tx, p_from_position, p_to_tx, p_to_position
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE ledger.projections p
    SET tx_id = p_to_tx, position = p_to_position, applied_total = p.applied_total + p_applied,
        updated_at = clock_timestamp()
    WHERE p.name = p_name AND p.state = 'active' AND p.tx_id = p_from_tx AND p.position = p_from_position;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_advance: % is not active at (%, %)', p_name, p_from_tx, p_from_position
            USING ERRCODE = 'serialization_failure';
    END IF;
END $$;

-- ---------------------------------------------------------------------
-- Rebuild: from the start of the log into shadow tables in schema
-- ledger_rebuild, while the live tables keep serving; resumable, as the
-- shadow's cursor commits with each step; then an atomic swap.

-- projection_rebuild_begin makes the shadow tables (empty copies of the
-- live ones, indexes and constraints included) unless a rebuild is in
-- progress, and reports 'started' or 'resumed'.
CREATE FUNCTION ledger.projection_rebuild_begin(p_name text) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    p record;
    t text;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR cardinality(p.tables) = 0 THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: no SQL projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    -- Shadow tables are unlogged (a rebuild writes each row twice, once
    -- there and once in the swap), and PostgreSQL empties unlogged tables
    -- when it recovers from a crash: a rebuild begun before the server
    -- last started is begun again.
    IF p.rebuild_tx_id IS NOT NULL AND p.rebuild_started_at > pg_postmaster_start_time() AND NOT EXISTS (
        SELECT 1 FROM unnest(p.tables) x WHERE to_regclass(format('ledger_rebuild.%I', x)) IS NULL) THEN
        RETURN 'resumed';
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        EXECUTE format('DROP TABLE IF EXISTS ledger_rebuild.%I', t);
        EXECUTE format('CREATE UNLOGGED TABLE ledger_rebuild.%I (LIKE ledger.%I INCLUDING ALL)', t, t);
    END LOOP;
    UPDATE ledger.projections
    SET rebuild_tx_id = '0', rebuild_position = 0, rebuild_applied = 0, rebuild_started_at = clock_timestamp()
    WHERE name = p_name;
    PERFORM ledger.projection_event(p_name, 'projection.rebuild_started', json_build_object('projection', p_name));
    RETURN 'started';
END $$;

-- projection_rebuild_step applies up to p_max delivered events after the
-- shadow's cursor to the shadow tables and returns the new cursor, the
-- events applied in all, the log's last position, and whether the shadow
-- has caught up with what read_all can deliver.
CREATE FUNCTION ledger.projection_rebuild_step(p_name text, p_max int)
RETURNS TABLE (tx_id text, "position" bigint, applied bigint, head bigint, caught_up boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_horizon xid8 := pg_snapshot_xmin(pg_current_snapshot());
    p         record;
    v_to      record;
    v_count   bigint;
    n         bigint;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR p.rebuild_tx_id IS NULL THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_step: no rebuild of % in progress', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF p.rebuild_started_at <= pg_postmaster_start_time() THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_step: PostgreSQL restarted during the rebuild of %, whose unlogged shadow tables may have been emptied', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'run the rebuild again: it begins anew';
    END IF;
    SELECT e.tx_id, e.position, e.n INTO v_to
    FROM (SELECT e.tx_id, e.position, row_number() OVER (ORDER BY e.tx_id, e.position) AS n FROM ledger.events e
          WHERE (e.tx_id, e.position) > (p.rebuild_tx_id, p.rebuild_position) AND e.tx_id < v_horizon
          ORDER BY e.tx_id, e.position LIMIT p_max) e
    ORDER BY e.n DESC LIMIT 1;
    SELECT e.position INTO head FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    IF v_to IS NULL THEN
        RETURN QUERY SELECT p.rebuild_tx_id::text, p.rebuild_position, p.rebuild_applied, coalesce(head, 0), true;
        RETURN;
    END IF;
    v_count := v_to.n;
    PERFORM set_config('search_path', 'pg_catalog, ledger_rebuild, ledger, pg_temp', true);
    n := ledger.projection_apply(p_name, p.rebuild_tx_id, p.rebuild_position, v_to.tx_id, v_to.position);
    PERFORM set_config('search_path', 'pg_catalog, ledger, pg_temp', true);
    UPDATE ledger.projections x
    SET rebuild_tx_id = v_to.tx_id, rebuild_position = v_to.position, rebuild_applied = x.rebuild_applied + v_count
    WHERE x.name = p_name;
    RETURN QUERY SELECT v_to.tx_id::text, v_to.position, p.rebuild_applied + v_count, coalesce(head, 0), v_count < p_max;
END $$;

-- projection_rebuild_swap brings the shadow up to date and makes it the
-- live read model in one transaction. The live tables are locked against
-- writers first (readers wait only for the copy): an inline projection
-- then takes every committed event, as the writers of any other wait for
-- the lock and apply their own after it; an asynchronous one takes what
-- read_all delivers and moves its checkpoint there, clearing a failure.
CREATE FUNCTION ledger.projection_rebuild_swap(p_name text)
RETURNS TABLE (tx_id text, "position" bigint, rows_copied bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    p     record;
    t     text;
    v_tx  xid8;
    v_pos bigint;
    cols  text;
    n    bigint := 0;
    c    bigint;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR p.rebuild_tx_id IS NULL THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_swap: no rebuild of % in progress', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF p.rebuild_started_at <= pg_postmaster_start_time() THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_swap: PostgreSQL restarted during the rebuild of %, whose unlogged shadow tables may have been emptied', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'run the rebuild again: it begins anew';
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        IF to_regclass(format('ledger_rebuild.%I', t)) IS NULL THEN
            RAISE EXCEPTION 'ledger.projection_rebuild_swap: shadow table ledger_rebuild.% is gone; begin the rebuild again', t
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        EXECUTE format('LOCK TABLE ledger.%I IN EXCLUSIVE MODE', t);
    END LOOP;
    IF p.mode = 'inline' THEN
        SELECT e.tx_id, e.position INTO v_tx, v_pos FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    ELSE
        SELECT e.tx_id, e.position INTO v_tx, v_pos FROM ledger.events e
        WHERE e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    END IF;
    IF v_tx IS NULL OR (v_tx, v_pos) <= (p.rebuild_tx_id, p.rebuild_position) THEN
        v_tx := p.rebuild_tx_id;
        v_pos := p.rebuild_position;
    ELSE
        PERFORM set_config('search_path', 'pg_catalog, ledger_rebuild, ledger, pg_temp', true);
        PERFORM ledger.projection_apply(p_name, p.rebuild_tx_id, p.rebuild_position, v_tx, v_pos);
        PERFORM set_config('search_path', 'pg_catalog, ledger, pg_temp', true);
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
        FROM pg_attribute a
        WHERE a.attrelid = format('ledger.%I', t)::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
        EXECUTE format('TRUNCATE ledger.%I', t);
        EXECUTE format('INSERT INTO ledger.%I (%s) SELECT %s FROM ledger_rebuild.%I', t, cols, cols, t);
        GET DIAGNOSTICS c = ROW_COUNT;
        n := n + c;
        EXECUTE format('DROP TABLE ledger_rebuild.%I', t);
    END LOOP;
    UPDATE ledger.projections x
    SET rebuild_tx_id = NULL, rebuild_position = NULL, rebuild_applied = NULL, rebuild_started_at = NULL,
        tx_id = CASE WHEN p.mode = 'async' THEN v_tx ELSE x.tx_id END,
        position = CASE WHEN p.mode = 'async' THEN v_pos ELSE x.position END,
        state = 'active', failed_tx_id = NULL, failed_position = NULL, failed_type = NULL, last_error = NULL,
        updated_at = clock_timestamp()
    WHERE x.name = p_name;
    PERFORM ledger.projection_event(p_name, 'projection.rebuilt',
        json_build_object('projection', p_name, 'tx_id', v_tx::text, 'position', v_pos, 'rows', n,
                          'started_at', p.rebuild_started_at));
    RETURN QUERY SELECT v_tx::text, v_pos, n;
END $$;

-- projection_rebuild_abort drops a rebuild's shadow tables.
CREATE FUNCTION ledger.projection_rebuild_abort(p_name text) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    p record;
    t text;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR p.rebuild_tx_id IS NULL THEN
        RETURN false;
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        EXECUTE format('DROP TABLE IF EXISTS ledger_rebuild.%I', t);
    END LOOP;
    UPDATE ledger.projections
    SET rebuild_tx_id = NULL, rebuild_position = NULL, rebuild_applied = NULL, rebuild_started_at = NULL
    WHERE name = p_name;
    RETURN true;
END $$;

-- ---------------------------------------------------------------------
-- Verify: rebuild into scratch tables (temporary, dropped at commit) and
-- compare every row with the live tables, as of the caller's snapshot,
-- which must be the transaction's (REPEATABLE READ): an inline projection
-- against every event the snapshot sees, an asynchronous one against the
-- events up to its checkpoint. Rows are compared as text, matched by
-- primary key; the first difference in key order is named.
CREATE FUNCTION ledger.projection_verify(p_name text)
RETURNS TABLE (table_name text, live_rows bigint, rebuilt_rows bigint, live_digest text, rebuilt_digest text,
               first_difference text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    p        record;
    t        text;
    v_to_tx  xid8;
    v_to_pos bigint;
    v_tx     xid8 := '0';
    v_pos    bigint := 0;
    v_n_tx   xid8;
    v_n_pos  bigint;
    pk       text;
BEGIN
    IF current_setting('transaction_isolation') NOT IN ('repeatable read', 'serializable') THEN
        RAISE EXCEPTION 'ledger.projection_verify: run it in a REPEATABLE READ transaction, so that the live tables and the log are read at one moment'
            USING ERRCODE = 'invalid_transaction_state';
    END IF;
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name;
    IF NOT FOUND OR cardinality(p.tables) = 0 THEN
        RAISE EXCEPTION 'ledger.projection_verify: no SQL projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF p.mode = 'inline' THEN
        SELECT e.tx_id, e.position INTO v_to_tx, v_to_pos FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    ELSE
        v_to_tx := p.tx_id;
        v_to_pos := p.position;
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        EXECUTE format('DROP TABLE IF EXISTS pg_temp.%I', t);
        EXECUTE format('CREATE TEMP TABLE %I (LIKE ledger.%I INCLUDING ALL) ON COMMIT DROP', t, t);
    END LOOP;
    LOOP
        EXIT WHEN v_to_tx IS NULL;
        SELECT e.tx_id, e.position INTO v_n_tx, v_n_pos
        FROM (SELECT e.tx_id, e.position FROM ledger.events e
              WHERE (e.tx_id, e.position) > (v_tx, v_pos) AND (e.tx_id, e.position) <= (v_to_tx, v_to_pos)
              ORDER BY e.tx_id, e.position LIMIT 50000) e
        ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
        EXIT WHEN NOT FOUND;
        PERFORM set_config('search_path', 'pg_catalog, pg_temp, ledger', true);
        PERFORM ledger.projection_apply(p_name, v_tx, v_pos, v_n_tx, v_n_pos);
        PERFORM set_config('search_path', 'pg_catalog, ledger, pg_temp', true);
        v_tx := v_n_tx;
        v_pos := v_n_pos;
    END LOOP;
    FOREACH t IN ARRAY p.tables LOOP
        SELECT string_agg(format('t.%I', a.attname), ', ' ORDER BY k.ord) INTO pk
        FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = format('ledger.%I', t)::regclass AND i.indisprimary;
        RETURN QUERY EXECUTE format($q$
            WITH l AS MATERIALIZED (SELECT jsonb_build_array(%1$s)::text AS k, t::text AS r FROM ledger.%2$I t),
                 s AS MATERIALIZED (SELECT jsonb_build_array(%1$s)::text AS k, t::text AS r FROM pg_temp.%2$I t)
            SELECT %3$L::text, (SELECT count(*) FROM l), (SELECT count(*) FROM s),
                   (SELECT md5(coalesce(string_agg(md5(r), '' ORDER BY k), '')) FROM l),
                   (SELECT md5(coalesce(string_agg(md5(r), '' ORDER BY k), '')) FROM s),
                   (SELECT left('row ' || coalesce(l.k, s.k) || ': ' ||
                                CASE WHEN l.k IS NULL THEN 'only in the rebuilt table: ' || s.r
                                     WHEN s.k IS NULL THEN 'only in the live table: ' || l.r
                                     ELSE 'live ' || l.r || ' <> rebuilt ' || s.r END, 4000)
                    FROM l FULL JOIN s ON l.k = s.k WHERE l.r IS DISTINCT FROM s.r
                    ORDER BY coalesce(l.k, s.k) LIMIT 1)
            $q$, pk, t, t);
    END LOOP;
END $$;

-- ---------------------------------------------------------------------
-- usage_refusal says why an executor's event cannot carry the figures
-- the quota read model adds up, or NULL when it can: execution.finished's
-- resources are an object of 64-bit integers, egress.connection's allowed
-- (when there) a boolean and its byte counts such integers. A value the projection
-- could not cast would stop it at that event for good, rebuilds included,
-- so executor_record and process_record refuse it (SQLSTATE 22023).
CREATE FUNCTION ledger.is_int64(v jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_typeof(v) = 'number' AND v::numeric = trunc(v::numeric)
           AND v::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
$$;

CREATE FUNCTION ledger.usage_refusal(p_type text, p_payload text) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j   jsonb;
    bad text;
BEGIN
    IF p_type IS DISTINCT FROM 'execution.finished' AND p_type IS DISTINCT FROM 'egress.connection' THEN
        RETURN NULL;
    END IF;
    j := p_payload::jsonb;
    IF p_type = 'execution.finished' THEN
        IF coalesce(jsonb_typeof(j -> 'resources'), 'null') = 'null' THEN
            RETURN NULL;
        END IF;
        IF jsonb_typeof(j -> 'resources') <> 'object' THEN
            RETURN 'resources must be an object';
        END IF;
        SELECT r.key INTO bad FROM jsonb_each(j -> 'resources') r WHERE NOT ledger.is_int64(r.value) LIMIT 1;
        IF FOUND THEN
            RETURN 'resources.' || bad || ' must be an integer';
        END IF;
        RETURN NULL;
    END IF;
    IF coalesce(jsonb_typeof(j -> 'allowed'), 'null') NOT IN ('boolean', 'null') THEN
        RETURN 'allowed must be a boolean';
    END IF;
    SELECT k INTO bad FROM unnest(ARRAY['bytes_up', 'bytes_down']) k
    WHERE j ? k AND jsonb_typeof(j -> k) <> 'null' AND NOT ledger.is_int64(j -> k) LIMIT 1;
    IF FOUND THEN
        RETURN bad || ' must be an integer';
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION ledger.is_int64(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.usage_refusal(text, text) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- The writers: each appends its events, then applies them through the
-- inline projections' functions, and writes no read model itself.


CREATE OR REPLACE FUNCTION ledger.submit(
    tool            text,
    input           jsonb,
    run_id          text  DEFAULT NULL,
    idempotency_key text  DEFAULT NULL,
    context         jsonb DEFAULT '{}'
) RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text;
    v_channel   text;
    v_device    text;
    v_bound     text[] := '{}';
    v_id        uuid;
    v_input     text;
    v_digest    bytea;
    v_existing  record;
    v_payload   text;
    v_meta      text;
    v_bad       text;
    v_pos       bigint;
BEGIN
    SELECT p.principal, p.channel, p.device INTO v_principal, v_channel, v_device
    FROM ledger.principals p WHERE p.login_role = session_user;
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.submit: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'an administrator adds it to ledger.principals';
    END IF;

    IF tool IS NULL OR tool !~ '^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$' OR octet_length(tool) > 128 THEN
        RAISE EXCEPTION 'ledger.submit: tool must be a dotted identifier of at most 128 bytes, got %',
            coalesce(quote_literal(left(tool, 200)), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF input IS NULL THEN
        RAISE EXCEPTION 'ledger.submit: input must be a JSON object, got NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF jsonb_typeof(input) <> 'object' THEN
        RAISE EXCEPTION 'ledger.submit: input must be a JSON object, got %', jsonb_typeof(input)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_input := input::text;
    IF octet_length(v_input) > 1048576 THEN
        RAISE EXCEPTION 'ledger.submit: input is % bytes, the limit is 1048576', octet_length(v_input)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF run_id IS NOT NULL AND run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
        RAISE EXCEPTION 'ledger.submit: run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF idempotency_key IS NOT NULL AND (idempotency_key = '' OR octet_length(idempotency_key) > 255
                                        OR idempotency_key ~ '[[:cntrl:]]') THEN
        RAISE EXCEPTION 'ledger.submit: idempotency_key must be 1 to 255 bytes without control characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF context IS NULL OR jsonb_typeof(context) <> 'object' THEN
        RAISE EXCEPTION 'ledger.submit: context must be a JSON object, got %', coalesce(jsonb_typeof(context), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF context <> '{}' THEN
        SELECT k INTO v_bad FROM jsonb_object_keys(context) AS k
        WHERE k NOT IN ('device', 'channel', 'session') LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context key "%" is not one of device, channel, session', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT k INTO v_bad FROM jsonb_each(context) AS c(k, v)
        WHERE jsonb_typeof(c.v) <> 'string' OR octet_length(c.v #>> '{}') NOT BETWEEN 1 AND 256 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context.% must be a string of 1 to 256 bytes', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    -- Bound context: the administrator's value, never the caller's.
    IF v_channel IS NOT NULL THEN
        IF context ? 'channel' AND context ->> 'channel' <> v_channel THEN
            RAISE EXCEPTION 'ledger.submit: context.channel is bound to % for login role "%"; % is not it',
                quote_literal(v_channel), session_user, quote_literal(context ->> 'channel')
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        context := context || jsonb_build_object('channel', v_channel);
        v_bound := v_bound || 'channel'::text;
    END IF;
    IF v_device IS NOT NULL THEN
        IF context ? 'device' AND context ->> 'device' <> v_device THEN
            RAISE EXCEPTION 'ledger.submit: context.device is bound to % for login role "%"; % is not it',
                quote_literal(v_device), session_user, quote_literal(context ->> 'device')
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        context := context || jsonb_build_object('device', v_device);
        v_bound := v_bound || 'device'::text;
    END IF;

    v_digest := sha256(convert_to(v_input, 'UTF8'));
    v_id := ledger.uuid_v7();

    -- A repeated idempotency key returns the first request. The key's
    -- advisory lock orders two submits of one key: the second sees the
    -- first's row once it has committed.
    IF submit.idempotency_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('idempotency:' || v_principal || '/' || submit.idempotency_key, 0));
        SELECT r.id, r.tool, r.input_digest, r.run_id INTO v_existing
        FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = submit.idempotency_key;
        IF FOUND THEN
            IF v_existing.tool <> submit.tool OR v_existing.input_digest <> v_digest
               OR v_existing.run_id IS DISTINCT FROM submit.run_id THEN
                RAISE EXCEPTION 'ledger.submit: idempotency key % already names request %, which has another tool, input or run_id',
                    quote_literal(idempotency_key), v_existing.id
                    USING ERRCODE = 'unique_violation',
                          HINT = 'a retry must repeat the same tool, input and run_id';
            END IF;
            RETURN v_existing.id;
        END IF;
    END IF;

    v_payload := json_build_object(
        'request_id', v_id,
        'principal', v_principal,
        'tool', submit.tool,
        'run_id', submit.run_id,
        'idempotency_key', submit.idempotency_key,
        'input', input,
        'input_digest', 'sha256:' || encode(v_digest, 'hex'),
        'context', context,
        'context_bound', to_json(v_bound))::text;
    v_meta := json_build_object(
        'actor', v_principal,
        'login_role', session_user,
        'correlation_id', v_id)::text;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || v_id, 1, 'tool.requested', v_payload::json, v_meta::json)
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);

    INSERT INTO ledger.queue (id) VALUES (v_id);

    PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
    IF FOUND THEN
        PERFORM pg_notify('ledger_request_pending', '');
    END IF;
    RETURN v_id;
END $$;

CREATE OR REPLACE FUNCTION ledger.cancel(request_id uuid, reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    v_principal text;
    v_admin     boolean;
    v_req       record;
    v_q         record;
    v_pos       bigint;
BEGIN
    v_principal := ledger.current_principal();
    v_admin := pg_has_role(session_user, 'ledger_admin', 'MEMBER');
    IF v_principal IS NULL AND NOT v_admin THEN
        RAISE EXCEPTION 'ledger.cancel: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF reason IS NOT NULL AND octet_length(reason) > 1024 THEN
        RAISE EXCEPTION 'ledger.cancel: reason is % bytes, the limit is 1024', octet_length(reason)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    SELECT r.id, r.principal, r.state INTO v_req
    FROM ledger.request_status r WHERE r.id = request_id;
    IF NOT FOUND OR (v_req.principal IS DISTINCT FROM v_principal AND NOT v_admin) THEN
        RAISE EXCEPTION 'ledger.cancel: no request %', request_id USING ERRCODE = 'no_data_found';
    END IF;

    -- The queue row is the lock that orders cancel against claim and completion.
    SELECT q.state, q.cancel_requested, q.stream_version INTO v_q FROM ledger.queue q WHERE q.id = request_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF v_q.state = 'running' THEN
        IF NOT v_q.cancel_requested THEN
            UPDATE ledger.queue SET cancel_requested = true WHERE id = request_id;
            -- A wake-up only: executors read the flags of the claims they hold.
            PERFORM pg_notify('ledger_request_cancel', '');
        END IF;
        RETURN true;
    END IF;

    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || request_id, v_q.stream_version + 1, 'request.cancelled',
            json_build_object('request_id', request_id, 'reason', reason, 'previous_state', v_q.state),
            json_build_object('actor', coalesce(v_principal, session_user::text), 'login_role', session_user,
                              'correlation_id', request_id))
    RETURNING "position" INTO v_pos;
    DELETE FROM ledger.queue WHERE id = request_id;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    PERFORM ledger.notify_done(v_req.principal, request_id);
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    v_principal text := ledger.current_principal();
    v_op        text := CASE WHEN p_grant THEN 'ledger.approve' ELSE 'ledger.deny_approval' END;
    v_req       record;
    v_q         record;
    v_digest    text;
    v_pos       bigint;
BEGIN
    IF v_principal IS NULL OR NOT pg_has_role(session_user, 'ledger_approver', 'MEMBER') THEN
        RAISE EXCEPTION '%: login role "%" is not an approver', v_op, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_note IS NOT NULL AND octet_length(p_note) > 1024 THEN
        RAISE EXCEPTION '%: note is % bytes, the limit is 1024', v_op, octet_length(p_note)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    SELECT r.principal, r.input_digest, r.state INTO v_req FROM ledger.request_status r WHERE r.id = p_request_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: no request %', v_op, p_request_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_req.principal = v_principal THEN
        RAISE EXCEPTION '%: principal % submitted request % and may not decide its approval', v_op, v_principal, p_request_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_digest := 'sha256:' || encode(v_req.input_digest, 'hex');
    IF p_digest IS NOT NULL AND p_digest <> v_digest THEN
        RAISE EXCEPTION '%: request % has input %, not the % that was approved', v_op, p_request_id, v_digest, p_digest
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT q.state, q.stream_version, q.approved_digest INTO v_q FROM ledger.queue q WHERE q.id = p_request_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: request % has already ended (%)', v_op, p_request_id, v_req.state
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF v_q.state = 'running' THEN
        RAISE EXCEPTION '%: request % is running: it was authorized without waiting for approval', v_op, p_request_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'only tools the executor marks sensitive wait for approval; ledger.cancel stops a running request';
    END IF;
    IF v_q.state = 'pending' AND v_q.approved_digest IS NOT DISTINCT FROM v_req.input_digest THEN
        RAISE EXCEPTION '%: request % is approved already', v_op, p_request_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || p_request_id, v_q.stream_version + 1,
            CASE WHEN p_grant THEN 'approval.granted' ELSE 'approval.denied' END,
            json_build_object('request_id', p_request_id, 'approver', v_principal, 'note', p_note,
                              'input_digest', v_digest, 'reason', CASE WHEN p_grant THEN 'approved' ELSE 'denied_by_approver' END,
                              'previous_state', v_q.state,
                              'error', CASE WHEN NOT p_grant THEN 'approval denied by ' || v_principal || coalesce(': ' || p_note, '') END),
            json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id))
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    IF p_grant THEN
        UPDATE ledger.queue
        SET state = 'pending', stream_version = stream_version + 1, approved_digest = v_req.input_digest,
            approval_expires_at = NULL,
            available_at = CASE WHEN v_q.state = 'awaiting_approval' THEN clock_timestamp() ELSE available_at END
        WHERE id = p_request_id;
        IF v_q.state = 'awaiting_approval' THEN
            PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
            IF FOUND THEN
                PERFORM pg_notify('ledger_request_pending', '');
            END IF;
        END IF;
    ELSE
        DELETE FROM ledger.queue WHERE id = p_request_id;
        PERFORM ledger.notify_done(v_req.principal, p_request_id);
    END IF;
END $$;
CREATE OR REPLACE FUNCTION ledger.executor_record(
    claim_requests   uuid[],
    claim_ids        uuid[],
    streams          text[],
    versions         bigint[],
    types            text[],
    payloads         text[],
    metadatas        text[],
    kinds            text[],
    charges          boolean[],
    states           text[],
    error_kinds      text[],
    errors           text[],
    outputs          text[],
    tiers            text[],
    approval_timeout interval DEFAULT NULL
) RETURNS TABLE ("position" bigint, hash bytea)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    n      int := coalesce(cardinality(claim_requests), 0);
    m      int := coalesce(cardinality(streams), 0);
    v_vers bigint[];
    v_rows ledger.executor_record_row[];
    v_bad  uuid;
    bad    record;
    v_pos  bigint[];
    v_hash bytea[];
    v_lo   bigint;
    v_hi   bigint;
BEGIN
    IF cardinality(claim_ids) IS DISTINCT FROM cardinality(claim_requests)
       OR coalesce(cardinality(versions), 0) <> m OR coalesce(cardinality(types), 0) <> m
       OR coalesce(cardinality(payloads), 0) <> m OR coalesce(cardinality(metadatas), 0) <> m
       OR coalesce(cardinality(kinds), 0) <> n OR coalesce(cardinality(charges), 0) <> n
       OR coalesce(cardinality(states), 0) <> n OR coalesce(cardinality(error_kinds), 0) <> n
       OR coalesce(cardinality(errors), 0) <> n OR coalesce(cardinality(outputs), 0) <> n
       OR coalesce(cardinality(tiers), 0) <> n THEN
        RAISE EXCEPTION 'ledger.executor_record: the per-request arrays (claim_requests, claim_ids, kinds, charges, states, error_kinds, errors, outputs, tiers) and the per-event arrays (streams, versions, types, payloads, metadatas) must each have one length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF n = 0 THEN
        IF m > 0 THEN
            RAISE EXCEPTION 'ledger.executor_record: events name no claimed request'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN;
    END IF;
    IF (SELECT count(DISTINCT x) FROM unnest(claim_requests) AS x) <> n OR array_position(claim_requests, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.executor_record: claim_requests must be distinct and not NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF approval_timeout IS NULL AND 'await_approval' = ANY(kinds) THEN
        RAISE EXCEPTION 'ledger.executor_record: await_approval needs an approval_timeout'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Lock the queue rows in id order, as claim, heartbeat and completion do.
    PERFORM 1 FROM ledger.queue q WHERE q.id = ANY(claim_requests) ORDER BY q.id FOR UPDATE;

    -- Every event and every state change against the request's claim state.
    -- An event is about the request whose stream it is on, or, on a
    -- channel, the one its correlation_id names: matched against the
    -- requests the call names, by stream name.
    WITH st AS MATERIALIZED (
        SELECT 'request:' || c.request_id AS stream, c.* FROM ledger.claim_state(claim_requests, claim_ids) c
    ), ev AS (
        SELECT u.t, u.s, u.ord,
               CASE WHEN u.s LIKE 'request:%' THEN u.s
                    WHEN u.s LIKE 'channel:%' AND u.t = 'channel.message' THEN 'request:' || (u.m::json ->> 'correlation_id')
               END AS key
        FROM unnest(streams, types, metadatas) WITH ORDINALITY AS u(s, t, m, ord)
    ), asked AS (
        SELECT ev.ord, ev.key, ev.s AS what, ev.t AS type, NULL::text AS kind FROM ev
        UNION ALL
        SELECT m + k.ord, 'request:' || k.req, 'request:' || k.req, NULL, k.kind
        FROM unnest(claim_requests, kinds) WITH ORDINALITY AS k(req, kind, ord) WHERE k.kind IS NOT NULL
    )
    SELECT a.what, a.type, a.kind, st.request_id AS req,
           CASE WHEN a.key IS NULL THEN 'executors write only request:<id> streams and channel.message events'
                WHEN st.request_id IS NULL THEN 'the call names no claim for that request'
                WHEN a.kind NOT IN ('start', 'await_approval', 'requeue', 'finish', 'attest') THEN 'unknown state change ' || a.kind
                WHEN a.type NOT IN ('policy.decided', 'budget.consumed', 'execution.started', 'approval.requested',
                                    'execution.finished', 'request.cancelled', 'egress.connection', 'capability.used',
                                    'channel.published', 'channel.message', 'lease.expired', 'approval.denied',
                                    'attestation.signed') THEN 'executors do not write ' || a.type || ' events'
                WHEN a.kind IN ('start', 'await_approval') AND st.held THEN 'it has started already'
                ELSE ledger.claim_refusal(st.claim_id, st.queue_state, st.claimed_role, st.final) END AS why
    INTO bad
    FROM asked a
    LEFT JOIN st ON st.stream = a.key
    WHERE NOT coalesce(CASE
        WHEN a.type = 'lease.expired' OR a.kind = 'requeue' THEN st.lease_gone
        WHEN a.type = 'approval.denied' THEN st.approval_gone
        WHEN a.type = 'attestation.signed' THEN st.held OR st.lease_gone OR st.approval_gone OR st.unattested
        WHEN a.type IN ('policy.decided', 'budget.consumed', 'execution.started', 'approval.requested',
                        'execution.finished', 'request.cancelled', 'egress.connection', 'capability.used',
                        'channel.published', 'channel.message') THEN st.held
        WHEN a.kind IN ('start', 'await_approval') THEN st.held AND NOT st.started
        WHEN a.kind = 'finish' THEN st.held OR st.lease_gone OR st.approval_gone
        WHEN a.kind = 'attest' THEN st.unattested
        ELSE false END, false)
    ORDER BY a.ord LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: % of request % refused: %',
            coalesce(bad.type || ' on ' || bad.what, 'state change ' || bad.kind), coalesce(bad.req::text, 'not named'), bad.why
            USING ERRCODE = 'insufficient_privilege';
    END IF;

    -- Versions: NULL is the stream's next.
    v_vers := ARRAY(
        SELECT coalesce(u.v, (SELECT coalesce(max(e.version), 0) FROM ledger.events e WHERE e.stream = u.s)
                             + row_number() OVER (PARTITION BY u.s, u.v IS NULL ORDER BY u.ord))
        FROM unnest(streams, versions) WITH ORDINALITY AS u(s, v, ord) ORDER BY u.ord);

    -- One row per request: its outcome, its new head and, for finish and
    -- attest, its attestation, parsed once.
    SELECT array_agg(ROW(k.req, k.kind, coalesce(k.charge, false), k.state, k.error_kind, k.error, k.output, k.tier,
                         r.principal, r.run_id,
                         coalesce(last.version, (SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'request:' || k.req)),
                         att.digest)::ledger.executor_record_row ORDER BY k.ord),
           (array_agg(k.req ORDER BY k.ord) FILTER (WHERE k.kind IN ('finish', 'attest') AND (
                last.type IS DISTINCT FROM 'attestation.signed' OR att.digest IS NULL
                OR (k.kind = 'finish' AND (
                    k.state IS NULL OR k.state NOT IN ('succeeded', 'failed', 'denied', 'cancelled')
                    OR (k.state = 'succeeded') <> (k.error_kind IS NULL)
                    OR att.pred ->> 'success' IS DISTINCT FROM (k.state = 'succeeded')::text
                    OR coalesce(att.pred ->> 'error_kind', '') <> coalesce(k.error_kind, ''))))))[1]
    INTO v_rows, v_bad
    FROM unnest(claim_requests, kinds, charges, states, error_kinds, errors, outputs, tiers)
        WITH ORDINALITY AS k(req, kind, charge, state, error_kind, error, output, tier, ord)
    JOIN LATERAL (SELECT x.principal, x.run_id FROM ledger.request_status x WHERE x.id = k.req LIMIT 1) r ON true
    LEFT JOIN (
        SELECT DISTINCT ON (e.s) e.s, v_vers[e.ord] AS version, e.t AS type, e.p AS payload
        FROM unnest(streams, types, payloads) WITH ORDINALITY AS e(s, t, p, ord)
        ORDER BY e.s, e.ord DESC
    ) last ON last.s = 'request:' || k.req
    LEFT JOIN LATERAL (
        SELECT CASE WHEN j.named = k.req::text AND j.pred ->> 'request_id' = k.req::text
                         AND j.digest = 'sha256:' || encode(sha256(convert_to(j.envelope, 'UTF8')), 'hex')
                    THEN j.digest END AS digest,
               j.pred
        FROM (SELECT x.pj ->> 'request_id' AS named, x.pj ->> 'attestation_digest' AS digest, x.pj ->> 'envelope' AS envelope,
                     (convert_from(decode((x.pj ->> 'envelope')::json ->> 'payload', 'base64'), 'UTF8')::jsonb) -> 'predicate' AS pred
              FROM (SELECT last.payload::jsonb AS pj OFFSET 0) x
              OFFSET 0) j
        WHERE k.kind IN ('finish', 'attest') AND last.type = 'attestation.signed'
    ) att ON true;
    IF v_bad IS NOT NULL THEN
        SELECT t.id, t.kind, t.state INTO bad FROM unnest(v_rows) t WHERE t.id = v_bad LIMIT 1;
        RAISE EXCEPTION 'ledger.executor_record: request % cannot %: its last event in the call must be an attestation.signed that names it (in the event and in its statement), carries its envelope''s digest and agrees with the outcome and error kind',
            bad.id, CASE WHEN bad.kind = 'finish' THEN 'end ' || coalesce(bad.state, 'NULL') ELSE 'be attested' END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT u.t AS type, u.s AS stream, ledger.usage_refusal(u.t, u.p) AS why INTO bad
    FROM unnest(types, payloads, streams) AS u(t, p, s)
    WHERE u.t IN ('execution.finished', 'egress.connection') AND ledger.usage_refusal(u.t, u.p) IS NOT NULL
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: % on % refused: %', bad.type, bad.stream, bad.why
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A call is charged to its run's budget by its budget.consumed event,
    -- which only the start of a charged call of a run carries, once.
    SELECT k.req INTO v_bad
    FROM unnest(claim_requests, kinds, charges) AS k(req, kind, charge)
    JOIN ledger.queue q ON q.id = k.req
    JOIN ledger.request_status r ON r.id = k.req
    LEFT JOIN (SELECT u.s, count(*) AS c FROM unnest(streams, types) AS u(s, t) WHERE u.t = 'budget.consumed' GROUP BY u.s) b
           ON b.s = 'request:' || k.req
    WHERE coalesce(b.c, 0) <> CASE WHEN k.kind = 'start' AND k.charge AND r.run_id IS NOT NULL AND NOT q.charged THEN 1 ELSE 0 END
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: request % must have one budget.consumed exactly when its start is charged to its run for the first time', v_bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT array_agg(i.position), array_agg(i.hash) INTO v_pos, v_hash
    FROM ledger.insert_events(streams, v_vers, types, payloads, metadatas) i;
    RETURN QUERY SELECT u.p, u.h FROM unnest(v_pos, v_hash) AS u(p, h);
    SELECT min(u), max(u) INTO v_lo, v_hi FROM unnest(v_pos) u;
    IF v_lo IS NOT NULL THEN
        PERFORM ledger.apply_requests(pg_current_xact_id(), v_lo - 1, pg_current_xact_id(), v_hi);
        IF 'budget.consumed' = ANY(types) THEN
            PERFORM ledger.apply_runs(pg_current_xact_id(), v_lo - 1, pg_current_xact_id(), v_hi);
        END IF;
    END IF;

    IF 'start' = ANY(kinds) THEN
        UPDATE ledger.queue q
        SET stream_version = t.head, started_at = clock_timestamp(), charged = q.charged OR (t.charge AND t.run_id IS NOT NULL)
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'start';
    END IF;
    IF 'await_approval' = ANY(kinds) THEN
        UPDATE ledger.queue q
        SET state = 'awaiting_approval', stream_version = t.head, claim_id = NULL, claimed_by = NULL, claimed_role = NULL,
            lease_expires_at = NULL, approval_expires_at = clock_timestamp() + approval_timeout
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'await_approval';
    END IF;
    IF 'requeue' = ANY(kinds) THEN
        UPDATE ledger.queue q
        SET state = 'pending', stream_version = t.head, claim_id = NULL, claimed_by = NULL, claimed_role = NULL,
            lease_expires_at = NULL, started_at = NULL, available_at = clock_timestamp()
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'requeue';
    END IF;
    IF 'finish' = ANY(kinds) THEN
        DELETE FROM ledger.queue q USING unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'finish';
    END IF;
    -- The request read model now says what the events say; it must be
    -- the state change the call asked for.
    SELECT t.id, t.kind, r.state INTO bad
    FROM unnest(v_rows) t JOIN ledger.request_status r ON r.id = t.id
    WHERE t.kind IS NOT NULL AND NOT coalesce(CASE t.kind
        WHEN 'start' THEN r.state = 'running'
        WHEN 'await_approval' THEN r.state = 'awaiting_approval'
        WHEN 'requeue' THEN r.state = 'pending'
        WHEN 'finish' THEN r.state = t.state AND r.error_kind IS NOT DISTINCT FROM t.error_kind
                           AND r.attestation_digest = t.digest
        WHEN 'attest' THEN r.attestation_digest = t.digest END, false)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: the events recorded for request % leave it %, which is not the % asked for',
            bad.id, bad.state, bad.kind
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'execution.started, approval.requested, lease.expired (requeued), a final event and attestation.signed make those changes';
    END IF;

    IF 'finish' = ANY(kinds) THEN
        -- One channel name per principal, not per request.
        WITH c AS MATERIALIZED (
            SELECT p.principal, ledger.done_channel(p.principal) AS channel
            FROM (SELECT DISTINCT x.principal FROM unnest(v_rows) x WHERE x.kind = 'finish') p
        )
        SELECT count(pg_notify(c.channel, t.id::text)) INTO n
        FROM unnest(v_rows) t JOIN c ON c.principal = t.principal
        WHERE t.kind = 'finish';
        IF ledger.legacy_done_ids() THEN
            PERFORM pg_notify('ledger_request_done', t.id::text) FROM unnest(v_rows) t WHERE t.kind = 'finish';
        ELSE
            PERFORM pg_notify('ledger_request_done', '');
        END IF;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max int)
RETURNS TABLE (principal text, run_id text, max_calls int, used int, ended boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Budgets are serialized by an advisory lock per run (set_run_budget,
    -- end_run and claims take it), not by a row: ledger.runs is a read
    -- model, and a run that has no event yet has no row.
    PERFORM pg_advisory_xact_lock(hashtextextended('run:' || k.principal || '/' || k.run_id, 0))
    FROM (SELECT DISTINCT s.principal, s.run_id
          FROM ledger.queue q
          JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
          JOIN ledger.request_status s ON s.id = q.id
          WHERE q.claimed_role = session_user AND s.run_id IS NOT NULL
          ORDER BY 1, 2) k;
    RETURN QUERY
    SELECT k.principal, k.run_id, coalesce(r.max_calls, default_max), coalesce(r.used, 0), r.ended_at IS NOT NULL
    FROM (SELECT DISTINCT s.principal, s.run_id
          FROM ledger.queue q
          JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
          JOIN ledger.request_status s ON s.id = q.id
          WHERE q.claimed_role = session_user AND s.run_id IS NOT NULL) k
    LEFT JOIN ledger.runs r ON r.principal = k.principal AND r.run_id = k.run_id
    ORDER BY k.principal, k.run_id;
END $$;

CREATE OR REPLACE FUNCTION ledger.set_run_budget(run_id text, max_calls int) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text := ledger.current_principal();
    v_version   bigint;
    v_stream    text;
    v_pos       bigint;
BEGIN
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.set_run_budget: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF run_id IS NULL OR run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
        RAISE EXCEPTION 'ledger.set_run_budget: run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_calls IS NULL OR max_calls < 0 OR max_calls > 1000000 THEN
        RAISE EXCEPTION 'ledger.set_run_budget: max_calls must be between 0 and 1000000, got %', coalesce(max_calls::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_stream := 'run:' || v_principal || '/' || set_run_budget.run_id;
    PERFORM pg_advisory_xact_lock(hashtextextended(v_stream, 0));
    SELECT coalesce(max(e.version), 0) + 1 INTO v_version FROM ledger.events e WHERE e.stream = v_stream;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES (v_stream, v_version, 'run.budget_set',
            json_build_object('principal', v_principal, 'run_id', set_run_budget.run_id, 'max_calls', set_run_budget.max_calls),
            json_build_object('actor', v_principal, 'login_role', session_user))
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_runs(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
END $$;

CREATE OR REPLACE FUNCTION ledger.end_run(run_id text, reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text := ledger.current_principal();
    v_version   bigint;
    v_stream    text;
    v_pos       bigint;
BEGIN
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.end_run: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF run_id IS NULL OR run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
        RAISE EXCEPTION 'ledger.end_run: run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF reason IS NOT NULL AND length(reason) > 1000 THEN
        RAISE EXCEPTION 'ledger.end_run: reason is longer than 1000 characters'
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    v_stream := 'run:' || v_principal || '/' || end_run.run_id;
    PERFORM pg_advisory_xact_lock(hashtextextended(v_stream, 0));
    IF EXISTS (SELECT 1 FROM ledger.runs r WHERE r.principal = v_principal AND r.run_id = end_run.run_id AND r.ended_at IS NOT NULL) THEN
        RETURN false;
    END IF;
    SELECT coalesce(max(e.version), 0) + 1 INTO v_version FROM ledger.events e WHERE e.stream = v_stream;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES (v_stream, v_version, 'run.ended',
            json_build_object('principal', v_principal, 'run_id', end_run.run_id, 'reason', end_run.reason),
            json_build_object('actor', v_principal, 'login_role', session_user))
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_runs(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    RETURN true;
END $$;
-- ---------------------------------------------------------------------
-- Who reads what. A submitter reads its own principal's audit rows and
-- quota use; auditors and admins read all, as do executors (serve exports
-- the quota metrics).
ALTER TABLE ledger.audit_trail ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_trail_own ON ledger.audit_trail FOR SELECT TO ledger_submitter
    USING (principal = (SELECT ledger.current_principal()));
CREATE POLICY audit_trail_all ON ledger.audit_trail FOR SELECT TO ledger_auditor, ledger_admin
    USING (true);

ALTER TABLE ledger.quota_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE ledger.quota_usage_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE ledger.quota_denials ENABLE ROW LEVEL SECURITY;
ALTER TABLE ledger.quota_usage_buckets ENABLE ROW LEVEL SECURITY;
CREATE POLICY quota_usage_own ON ledger.quota_usage FOR SELECT TO ledger_submitter
    USING (principal = (SELECT ledger.current_principal()));
CREATE POLICY quota_usage_all ON ledger.quota_usage FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin
    USING (true);
CREATE POLICY quota_usage_runs_own ON ledger.quota_usage_runs FOR SELECT TO ledger_submitter
    USING (principal = (SELECT ledger.current_principal()));
CREATE POLICY quota_usage_runs_all ON ledger.quota_usage_runs FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin
    USING (true);
CREATE POLICY quota_denials_own ON ledger.quota_denials FOR SELECT TO ledger_submitter
    USING (principal = (SELECT ledger.current_principal()));
CREATE POLICY quota_denials_all ON ledger.quota_denials FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin
    USING (true);
CREATE POLICY quota_usage_buckets_own ON ledger.quota_usage_buckets FOR SELECT TO ledger_submitter
    USING (principal = (SELECT ledger.current_principal()));
CREATE POLICY quota_usage_buckets_all ON ledger.quota_usage_buckets FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin
    USING (true);

REVOKE ALL ON ledger.audit_trail, ledger.quota_usage, ledger.quota_usage_runs, ledger.quota_denials,
    ledger.quota_usage_buckets, ledger.skill_status FROM PUBLIC;
GRANT SELECT ON ledger.audit_trail TO ledger_submitter, ledger_auditor, ledger_admin;
GRANT SELECT ON ledger.quota_usage, ledger.quota_usage_runs, ledger.quota_denials, ledger.quota_usage_buckets
    TO ledger_submitter, ledger_executor, ledger_auditor, ledger_admin;
GRANT SELECT ON ledger.skill_status TO ledger_submitter, ledger_approver, ledger_executor, ledger_auditor, ledger_admin;

REVOKE ALL ON FUNCTION ledger.events_between(xid8, bigint, xid8, bigint, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.events_in_tx(xid8, bigint, bigint, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.apply_requests(xid8, bigint, xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.apply_runs(xid8, bigint, xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.apply_audit_trail(xid8, bigint, xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.apply_quota_usage(xid8, bigint, xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.apply_skill_status(xid8, bigint, xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_apply(text, xid8, bigint, xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_event(text, text, json) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_step(text, xid8, bigint, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_rebuild_begin(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_rebuild_step(text, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_rebuild_swap(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_rebuild_abort(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_verify(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_step(text, xid8, bigint, int) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_begin(text) TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_step(text, int) TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_swap(text) TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_abort(text) TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.projection_verify(text) TO ledger_admin, ledger_auditor;

-- The inline read models as their projections make them: rows an earlier
-- version wrote from parameters (clock times, messages the events did not
-- carry) are made again from the log, once.
SET LOCAL search_path = pg_catalog, ledger, pg_temp;
TRUNCATE ledger.request_status, ledger.runs;
SELECT ledger.apply_requests('0', 0, e.tx_id, e.position), ledger.apply_runs('0', 0, e.tx_id, e.position)
FROM (SELECT e.tx_id, e.position FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1) e;
RESET search_path;
