-- Execledger schema, as `make schema` dumps it from a freshly migrated database.
-- Do not edit: change migrations/ and run `make schema`.

--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: ledger; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA ledger;


--
-- Name: SCHEMA ledger; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON SCHEMA ledger IS 'Execledger: the event log, the SQL API and the read models built from the log.';


--
-- Name: ledger_rebuild; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA ledger_rebuild;


--
-- Name: executor_record_row; Type: TYPE; Schema: ledger; Owner: -
--

CREATE TYPE ledger.executor_record_row AS (
	id uuid,
	kind text,
	charge boolean,
	state text,
	error_kind text,
	error text,
	output text,
	tier text,
	principal text,
	run_id text,
	head bigint,
	digest text,
	last_ord bigint,
	decided_ord bigint,
	verdict text,
	fast boolean,
	r_state text,
	r_error_kind text,
	r_error text,
	r_output jsonb,
	r_tier text,
	budget_events bigint,
	refusal text
);


--
-- Name: projected_event; Type: TYPE; Schema: ledger; Owner: -
--

CREATE TYPE ledger.projected_event AS (
	tx_id xid8,
	"position" bigint,
	stream text,
	version bigint,
	type text,
	payload jsonb,
	metadata jsonb,
	recorded_at timestamp with time zone
);


--
-- Name: quota_fact; Type: TYPE; Schema: ledger; Owner: -
--

CREATE TYPE ledger.quota_fact AS (
	principal text,
	run_id text,
	recorded_at timestamp with time zone,
	reason text,
	requested integer,
	allowed integer,
	denied integer,
	exhausted integer,
	finished integer,
	failed integer,
	fuel bigint,
	cpu_ms bigint,
	wall_ms bigint,
	output_bytes bigint,
	conns integer,
	refused integer,
	egress_bytes bigint,
	budget_limit integer,
	budget_used integer,
	ended_at timestamp with time zone,
	version bigint,
	run_event boolean
);


--
-- Name: skill_result; Type: TYPE; Schema: ledger; Owner: -
--

CREATE TYPE ledger.skill_result AS (
	ok boolean,
	status text,
	message text
);


--
-- Name: advance_stream_heads(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.advance_stream_heads() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_want int;
    v_moved int;
    v_bad record;
BEGIN
    WITH batch AS MATERIALIZED (
        SELECT n.stream, min(n.version) AS lo, max(n.version) AS hi, count(*) AS cnt, count(DISTINCT n.version) AS dcnt
        FROM new_events n GROUP BY n.stream
    ), moved AS (
        INSERT INTO ledger.stream_heads AS h (stream, version, prior)
        SELECT b.stream, b.hi, b.lo - 1 FROM batch b
        WHERE b.cnt = b.dcnt AND b.hi - b.lo + 1 = b.cnt
        ORDER BY b.stream
        ON CONFLICT (stream) DO UPDATE SET version = excluded.version, prior = excluded.prior
        WHERE h.version <= excluded.prior
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM batch), (SELECT count(*) FROM moved) INTO v_want, v_moved;
    IF v_moved = v_want THEN
        RETURN NULL;
    END IF;
    SELECT b.stream, b.lo, h.version AS head INTO v_bad
    FROM (SELECT n.stream, min(n.version) AS lo FROM new_events n GROUP BY n.stream) b
    LEFT JOIN ledger.stream_heads h ON h.stream = b.stream
    WHERE h.version IS NULL OR h.version >= b.lo OR h.prior <> b.lo - 1
    ORDER BY b.stream
    LIMIT 1;
    -- The detail is the unique index's own, which ledger.appendError reads.
    RAISE EXCEPTION 'duplicate key value violates unique constraint "events_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'events_pkey', TABLE = 'events', SCHEMA = 'ledger',
              DETAIL = format('Key (stream, version)=(%s, %s) already exists.', coalesce(v_bad.stream, '?'), coalesce(v_bad.lo::text, '?')),
              HINT = 'a stream''s versions are appended once each, consecutively, above its head (ledger.stream_heads)';
END $$;


--
-- Name: append_events(text[], bigint[], text[], text[], text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) RETURNS TABLE("position" bigint, hash bytea)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_bad text;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user) THEN
        SELECT s INTO v_bad FROM unnest(streams) AS s
        WHERE s IS NULL OR s <> 'policy' LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.append_events: stream % is written only by the ledger''s functions', coalesce(v_bad, 'NULL')
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'executors record requests through ledger.executor_record, processes through ledger.process_start and ledger.process_record';
        END IF;
    END IF;
    RETURN QUERY SELECT i.position, i.hash FROM ledger.insert_events(streams, versions, types, payloads, metadatas) i;
END $$;


--
-- Name: apply_audit_trail(ledger.projected_event[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_audit_trail(p_events ledger.projected_event[]) RETURNS bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
DECLARE
    n bigint;
BEGIN
    SELECT count(*) INTO n FROM unnest(p_events) e
    WHERE e.type = ANY(ledger.projection_types('audit_trail')) AND e.stream LIKE 'request:%';
    IF n = 0 THEN
        RETURN 0;
    END IF;

    INSERT INTO audit_trail (position, tx_id, recorded_at, kind, event_type, request_id, principal, tool, run_id, attempt,
                             decision, stage, reason_code, determining_policies, policy_digest, approver, state, tier,
                             error_kind, resources, output_bytes, request_position, attestation_digest, attestation_position)
    SELECT e.position, e.tx_id, e.recorded_at, k.kind, e.type, substr(e.stream, 9)::uuid,
           CASE WHEN r.stream IS NOT NULL THEN coalesce(rq.principal, r.payload ->> 'principal') END, coalesce(rq.tool, r.payload ->> 'tool'),
           CASE WHEN rq.id IS NOT NULL THEN rq.run_id ELSE r.payload ->> 'run_id' END, (e.payload ->> 'attempt')::int,
           CASE WHEN k.kind = 'decision' THEN
               CASE e.type WHEN 'policy.decided' THEN e.payload ->> 'decision'
                           WHEN 'request.decided' THEN e.payload ->> 'decision'
                           WHEN 'approval.granted' THEN 'approved'
                           WHEN 'approval.denied' THEN 'denied' END END,
           CASE WHEN e.type IN ('policy.decided', 'request.decided') THEN e.payload ->> 'stage'
                WHEN e.type LIKE 'approval.%' THEN 'approval' END,
           CASE WHEN e.type IN ('policy.decided', 'request.decided', 'approval.granted', 'approval.denied') THEN e.payload ->> 'reason_code' END,
           CASE WHEN e.type IN ('policy.decided', 'request.decided') AND jsonb_typeof(e.payload -> 'determining_policies') = 'array'
                THEN ARRAY(SELECT jsonb_array_elements_text(e.payload -> 'determining_policies')) END,
           CASE WHEN e.type IN ('policy.decided', 'request.decided') THEN e.payload ->> 'policy_digest' END,
           CASE WHEN e.type LIKE 'approval.%' THEN e.payload ->> 'approver' END,
           CASE WHEN k.kind = 'outcome' THEN
               CASE e.type WHEN 'execution.finished' THEN e.payload ->> 'state'
                           WHEN 'execution.completed' THEN e.payload ->> 'state'
                           WHEN 'lease.expired' THEN CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END
                           WHEN 'request.cancelled' THEN 'cancelled'
                           ELSE 'denied' END END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed', 'lease.expired') THEN e.payload ->> 'tier' END,
           CASE e.type WHEN 'policy.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'request.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'approval.denied' THEN 'approval_denied'
                       WHEN 'execution.finished' THEN e.payload ->> 'error_kind'
                       WHEN 'execution.completed' THEN e.payload ->> 'error_kind'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN coalesce(e.payload ->> 'error_kind',
                           CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'outcome_unknown' END) END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') AND jsonb_typeof(e.payload -> 'resources') = 'object'
                THEN (e.payload -> 'resources')::jsonb END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') AND jsonb_typeof(e.payload -> 'output') IS DISTINCT FROM 'null'
                THEN octet_length((e.payload -> 'output')::text) END,
           r.position,
           CASE WHEN e.type = 'execution.completed' THEN e.payload ->> 'attestation_digest' END,
           CASE WHEN e.type = 'execution.completed' THEN e.position END
    FROM unnest(p_events) e
    -- A stream without its tool.requested leaves principal NULL: the
    -- insert fails, naming the column, rather than skip the event.
    -- (A lateral probe of (stream, version = 1), not a join: a plan kept
    -- from an empty ledger may join every stream's first event instead.)
    LEFT JOIN LATERAL (
        SELECT r.stream, r.payload, r.position FROM ledger.events r
        WHERE r.stream = e.stream AND r.version = 1 AND r.type = 'tool.requested'
        LIMIT 1) r ON true
    -- The request's principal, tool and run: its request_status row's
    -- columns (written with its tool.requested), not that event's payload
    -- parsed three times per row (it holds the whole input); the payload
    -- when the row is not there.
    LEFT JOIN ledger.request_status rq
           ON rq.id = CASE WHEN e.stream ~ '^request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                           THEN substr(e.stream, 9)::uuid END
    CROSS JOIN LATERAL (
        SELECT 'decision' AS kind WHERE e.type IN ('policy.decided', 'request.decided', 'approval.granted', 'approval.denied')
        UNION ALL
        SELECT 'outcome' WHERE e.type IN ('execution.finished', 'execution.completed', 'approval.denied')
            OR (e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny')
            OR (e.type = 'lease.expired' AND e.payload ->> 'action' <> 'requeued')
            OR (e.type = 'request.cancelled' AND e.payload ->> 'previous_state' IS DISTINCT FROM 'running')
    ) k
    WHERE e.type = ANY(ledger.projection_types('audit_trail')) AND e.stream LIKE 'request:%'
    ORDER BY e.position, k.kind;

    -- An attestation belongs to its request's outcome.
    UPDATE audit_trail a
    SET attestation_digest = s.digest, attestation_position = s.position
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS request_id, e.payload ->> 'attestation_digest' AS digest, e.position
          FROM unnest(p_events) e WHERE e.type = 'attestation.signed' AND e.stream LIKE 'request:%'
          ORDER BY e.stream, e.version DESC) s
    WHERE a.request_id = s.request_id AND a.kind = 'outcome';
    RETURN n;
END $_$;


--
-- Name: apply_audit_trail(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_audit_trail(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE sql
    AS $$
    SELECT ledger.apply_audit_trail(ledger.projection_read(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                           ledger.projection_types('audit_trail')))
$$;


--
-- Name: apply_processes(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_processes(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v ledger.events[];
BEGIN
    -- One transaction's events (the inline writers') by an index probe on
    -- tx_id; a range by read_all cursors otherwise (see migration 8).
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events e
                   WHERE e.tx_id = p_from_tx AND e.position > p_from_pos AND e.position <= p_to_pos
                     AND e.type IN ('process.started', 'process.stop_requested', 'egress.connection', 'process.ended',
                                    'process.lost', 'process.owner_role_recorded')
                     AND e.stream LIKE 'process:%'
                   ORDER BY e.stream, e.version);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events e
                   WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
                     AND e.type IN ('process.started', 'process.stop_requested', 'egress.connection', 'process.ended',
                                    'process.lost', 'process.owner_role_recorded')
                     AND e.stream LIKE 'process:%'
                   ORDER BY e.stream, e.version);
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;

    INSERT INTO processes (handle, principal, run_id, request_id, mode, tier, command, owner, owner_role, pid, pid_start,
                           started_at, expires_at)
    SELECT DISTINCT ON (e.stream)
           substr(e.stream, 9)::uuid, j.p ->> 'principal', j.p ->> 'run_id', (j.p ->> 'request_id')::uuid,
           j.p ->> 'mode', j.p ->> 'tier', j.p ->> 'command', j.p ->> 'owner', j.p ->> 'owner_role',
           (j.p ->> 'pid')::int, (j.p ->> 'pid_start')::bigint, (j.p ->> 'started_at')::timestamptz,
           (j.p ->> 'expires_at')::timestamptz
    FROM unnest(v) e CROSS JOIN LATERAL (SELECT e.payload::jsonb) AS j(p)
    WHERE e.type = 'process.started'
    ORDER BY e.stream, e.version
    ON CONFLICT (handle) DO NOTHING;

    UPDATE processes x
    SET stop_requested_at = s.recorded_at
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.recorded_at
          FROM unnest(v) e WHERE e.type = 'process.stop_requested'
          ORDER BY e.stream, e.version) s
    WHERE x.handle = s.handle AND x.stop_requested_at IS NULL;

    UPDATE processes x
    SET state = d.state, ended_at = d.recorded_at, end_reason = d.p ->> 'end_reason',
        exit_code = (d.p ->> 'exit_code')::int, signal = nullif((d.p ->> 'signal')::int, 0), result = d.p
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.recorded_at, e.payload::jsonb AS p,
                 CASE e.type WHEN 'process.ended' THEN 'ended' ELSE 'lost' END AS state
          FROM unnest(v) e WHERE e.type IN ('process.ended', 'process.lost')
          ORDER BY e.stream, e.version) d
    WHERE x.handle = d.handle AND x.state = 'running';

    UPDATE processes x
    SET owner_role = o.owner_role
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.payload ->> 'owner_role' AS owner_role
          FROM unnest(v) e WHERE e.type = 'process.owner_role_recorded'
          ORDER BY e.stream, e.version) o
    WHERE x.handle = o.handle AND x.owner_role IS NULL;

    RETURN cardinality(v);
END $$;


--
-- Name: apply_quota_usage(ledger.projected_event[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_quota_usage(p_events ledger.projected_event[]) RETURNS bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
DECLARE
    n bigint;
    f ledger.quota_fact[];
BEGIN
    f := ARRAY(
    SELECT ROW(coalesce(rq.principal, o.payload ->> 'principal', e.payload ->> 'principal'),
           CASE WHEN rq.id IS NOT NULL THEN rq.run_id ELSE coalesce(o.payload ->> 'run_id', e.payload ->> 'run_id') END,
           e.recorded_at,
           CASE WHEN e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny' THEN coalesce(e.payload ->> 'error_kind', 'policy_denied')
                WHEN e.type = 'approval.denied' THEN 'approval_denied' END,
           (e.type = 'tool.requested')::int,
           (e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'allow' AND e.payload ->> 'stage' = 'allow')::int,
           ((e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny') OR e.type = 'approval.denied')::int,
           (e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny' AND e.payload ->> 'error_kind' = 'budget_exhausted')::int,
           (e.type IN ('execution.finished', 'execution.completed'))::int,
           (e.type IN ('execution.finished', 'execution.completed') AND e.payload ->> 'state' IS DISTINCT FROM 'succeeded')::int,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN coalesce((e.payload -> 'resources' ->> 'fuel_used')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN coalesce((e.payload -> 'resources' ->> 'cpu_ms')::bigint,
               coalesce((e.payload -> 'resources' ->> 'cpu_user_ms')::bigint, 0) + coalesce((e.payload -> 'resources' ->> 'cpu_sys_ms')::bigint, 0)) ELSE 0 END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN coalesce((e.payload -> 'resources' ->> 'wall_ms')::bigint, 0) ELSE 0 END,
           -- An outcome without an output member counts 0 bytes, as one
           -- whose output is null: a batch of such outcomes alone summed
           -- to NULL and failed the insert.
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') AND jsonb_typeof(e.payload -> 'output') <> 'null'
                THEN octet_length((e.payload -> 'output')::text) ELSE 0 END,
           (e.type = 'egress.connection' AND (e.payload ->> 'allowed')::boolean)::int,
           (e.type = 'egress.connection' AND NOT (e.payload ->> 'allowed')::boolean)::int,
           CASE WHEN e.type = 'egress.connection' THEN coalesce((e.payload ->> 'bytes_up')::bigint, 0) + coalesce((e.payload ->> 'bytes_down')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type = 'run.budget_set' THEN (e.payload ->> 'max_calls')::int END,
           (e.type = 'budget.consumed' OR (e.type = 'request.decided' AND e.payload ? 'budget'))::int,
           CASE WHEN e.type = 'run.ended' THEN e.recorded_at END,
           e.version,
           e.type IN ('run.budget_set', 'run.ended'))::ledger.quota_fact
    FROM unnest(p_events) e
    -- A request's principal and run: its request_status row's columns,
    -- which submit wrote with its tool.requested, in the same transaction,
    -- before any later event of the stream could commit; without that row
    -- (a log whose request read model is not there), its tool.requested's.
    -- A process's: its process.started's.
    LEFT JOIN ledger.request_status rq
           ON rq.id = CASE WHEN e.stream ~ '^request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                           THEN substr(e.stream, 9)::uuid END
    -- A lateral probe of (stream, version = 1), not a join: a plan kept
    -- from an empty ledger joined every stream's first event, read whole
    -- at each call (20 ms a call after 40,000 events, and growing).
    LEFT JOIN LATERAL (
        SELECT o.stream, o.payload FROM ledger.events o
        WHERE o.stream = e.stream AND o.version = 1
        LIMIT 1) o
           ON rq.id IS NULL
              AND e.type IN ('request.decided', 'policy.decided', 'approval.denied', 'execution.finished', 'execution.completed',
                             'egress.connection', 'budget.consumed')
              AND (e.stream LIKE 'request:%' OR e.stream LIKE 'process:%')
    WHERE e.type = ANY(ledger.projection_types('quota_usage'))
      AND (e.type IN ('tool.requested', 'run.budget_set', 'run.ended') OR o.stream IS NOT NULL OR rq.id IS NOT NULL));
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

    INSERT INTO quota_denial_buckets AS q (principal, bucket, bucket_start, reason, denied)
    SELECT f.principal, b.bucket, date_trunc(b.bucket, f.recorded_at, 'UTC'), f.reason, sum(f.denied)
    FROM unnest(f) f CROSS JOIN unnest(ARRAY['hour', 'day']) AS b(bucket)
    WHERE f.denied > 0
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (principal, bucket, bucket_start, reason) DO UPDATE SET denied = q.denied + EXCLUDED.denied;

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
END $_$;


--
-- Name: apply_quota_usage(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_quota_usage(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE sql
    AS $$
    SELECT ledger.apply_quota_usage(ledger.projection_read(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                           ledger.projection_types('quota_usage')))
$$;


--
-- Name: apply_requests(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_requests(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
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
                       ARRAY['tool.requested', 'request.decided', 'policy.decided', 'approval.requested', 'approval.granted',
                             'approval.denied', 'execution.started', 'execution.finished', 'execution.completed',
                             'request.cancelled', 'lease.expired', 'attestation.signed']) e
                   WHERE e.stream LIKE 'request:%'
                   ORDER BY e.position);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                       ARRAY['tool.requested', 'request.decided', 'policy.decided', 'approval.requested', 'approval.granted',
                             'approval.denied', 'execution.started', 'execution.finished', 'execution.completed',
                             'request.cancelled', 'lease.expired', 'attestation.signed']) e
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
               CASE WHEN e.type IN ('attestation.signed', 'execution.completed') THEN e.payload ->> 'attestation_digest' END AS attestation
        FROM unnest(v) e
        CROSS JOIN LATERAL (
            SELECT CASE e.type
                       WHEN 'request.decided' THEN CASE e.payload ->> 'verdict' WHEN 'deny' THEN 'denied' WHEN 'run' THEN 'running' END
                       WHEN 'policy.decided' THEN CASE WHEN e.payload ->> 'decision' = 'deny' THEN 'denied' END
                       WHEN 'approval.requested' THEN 'awaiting_approval'
                       WHEN 'approval.granted' THEN 'pending'
                       WHEN 'approval.denied' THEN 'denied'
                       WHEN 'execution.started' THEN 'running'
                       WHEN 'execution.finished' THEN e.payload ->> 'state'
                       WHEN 'execution.completed' THEN e.payload ->> 'state'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN CASE e.payload ->> 'action' WHEN 'requeued' THEN 'pending'
                                                                             WHEN 'cancelled' THEN 'cancelled'
                                                                             ELSE 'failed' END
                   END AS state,
                   CASE e.type
                       WHEN 'request.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'policy.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'approval.denied' THEN 'approval_denied'
                       WHEN 'execution.finished' THEN e.payload ->> 'error_kind'
                       WHEN 'execution.completed' THEN e.payload ->> 'error_kind'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN coalesce(e.payload ->> 'error_kind',
                           CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'outcome_unknown' END)
                   END AS error_kind,
                   CASE e.type
                       WHEN 'request.decided' THEN e.payload ->> 'message'
                       WHEN 'policy.decided' THEN e.payload ->> 'message'
                       WHEN 'approval.denied' THEN coalesce(e.payload ->> 'error',
                           CASE WHEN e.payload ->> 'approver' IS NOT NULL
                                THEN 'approval denied by ' || (e.payload ->> 'approver') || coalesce(': ' || (e.payload ->> 'note'), '')
                                ELSE 'no approval within ' || coalesce(e.payload ->> 'timeout_ms', '?') || ' ms' END)
                       WHEN 'execution.finished' THEN e.payload ->> 'error'
                       WHEN 'execution.completed' THEN e.payload ->> 'error'
                       WHEN 'request.cancelled' THEN 'cancelled by ' || coalesce(e.metadata ->> 'actor', 'unknown')
                                                     || coalesce(': ' || (e.payload ->> 'reason'), '')
                       WHEN 'lease.expired' THEN e.payload ->> 'error'
                   END AS error,
                   CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN nullif((e.payload -> 'output')::jsonb, 'null'::jsonb) END AS output,
                   CASE WHEN e.type IN ('execution.finished', 'execution.completed', 'lease.expired') THEN e.payload ->> 'tier' END AS tier
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


--
-- Name: apply_runs(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_runs(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    n bigint;
    v ledger.projected_event[];
BEGIN
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events_in_tx(p_from_tx, p_from_pos, p_to_pos,
                                                     ARRAY['run.budget_set', 'run.ended', 'budget.consumed', 'request.decided']) e
                   WHERE e.type <> 'request.decided' OR e.payload ? 'budget');
    ELSE
        v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                       ARRAY['run.budget_set', 'run.ended', 'budget.consumed', 'request.decided']) e
                   WHERE e.type <> 'request.decided' OR e.payload ? 'budget');
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;
    WITH ev AS MATERIALIZED (
        SELECT CASE WHEN e.type = 'request.decided' THEN 'budget.consumed' ELSE e.type END AS type, e.version, e.recorded_at,
               CASE WHEN e.type IN ('budget.consumed', 'request.decided') THEN r.payload ->> 'principal' ELSE e.payload ->> 'principal' END AS principal,
               CASE WHEN e.type IN ('budget.consumed', 'request.decided') THEN r.payload ->> 'run_id' ELSE e.payload ->> 'run_id' END AS run_id,
               (e.payload ->> 'max_calls')::int AS max_calls
        FROM unnest(v) e
        -- A lateral probe of (stream, version = 1): a join may keep a plan
        -- that reads every stream's first event.
        LEFT JOIN LATERAL (SELECT r.payload FROM ledger.events r
                           WHERE e.type IN ('budget.consumed', 'request.decided') AND r.stream = e.stream AND r.version = 1
                           LIMIT 1) r ON true
        WHERE (e.type IN ('budget.consumed', 'request.decided') AND e.stream LIKE 'request:%')
           OR (e.type NOT IN ('budget.consumed', 'request.decided') AND e.stream = 'run:' || (e.payload ->> 'principal') || '/' || (e.payload ->> 'run_id'))
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


--
-- Name: apply_skill_status(ledger.projected_event[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_skill_status(p_events ledger.projected_event[]) RETURNS bigint
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


--
-- Name: apply_skill_status(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM ledger.skill_status_check(p_from_tx, p_from_pos, p_to_tx, p_to_pos);
    RETURN ledger.apply_skill_status(ledger.projection_read(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                            ledger.projection_types('skill_status')));
END $$;


--
-- Name: approve(uuid, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.approve(request_id uuid, note text DEFAULT NULL::text, input_digest text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, true, note, input_digest);
END $$;


--
-- Name: awaiting_approval(integer, uuid); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.awaiting_approval(p_limit integer DEFAULT 200, p_request_id uuid DEFAULT NULL::uuid) RETURNS TABLE(id uuid, principal text, tool text, run_id text, input_digest text, submitted_at timestamp with time zone, input jsonb, idempotency_key text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF NOT (pg_has_role(session_user, 'ledger_approver', 'MEMBER') OR pg_has_role(session_user, 'ledger_auditor', 'MEMBER')
            OR pg_has_role(session_user, 'ledger_admin', 'MEMBER')) THEN
        RAISE EXCEPTION 'ledger.awaiting_approval: login role "%" is not an approver, auditor or administrator', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'grant it ledger_approver to decide approvals; a submitter lists its own waiting requests in ledger.requests';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'ledger.awaiting_approval: limit % is not between 1 and 10000', p_limit
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT r.id, r.principal, r.tool, r.run_id, 'sha256:' || encode(r.input_digest, 'hex'), r.submitted_at,
           (e.payload -> 'input')::jsonb, r.idempotency_key
    FROM ledger.queue q
    JOIN ledger.request_status r ON r.id = q.id
    -- A lateral probe of (stream, version = 1): a join may keep a plan
    -- that reads every request's first event (TestHotPlansIgnoreStatistics).
    LEFT JOIN LATERAL (SELECT e.payload FROM ledger.events e
                       WHERE e.stream = 'request:' || r.id::text AND e.version = 1 LIMIT 1) e ON true
    WHERE q.state = 'awaiting_approval' AND r.state = 'awaiting_approval'
      AND (p_request_id IS NULL OR q.id = p_request_id)
    ORDER BY r.submitted_at, r.id
    LIMIT p_limit;
END
$$;


--
-- Name: FUNCTION awaiting_approval(p_limit integer, p_request_id uuid); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.awaiting_approval(p_limit integer, p_request_id uuid) IS 'The requests that wait for approval, oldest first, with their recorded input and its digest (approvers, auditors, administrators).';


--
-- Name: cancel(uuid, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.cancel(request_id uuid, reason text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
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
    SELECT q.state, q.cancel_requested, q.stream_version, q.trace_id, q.trace_span_id INTO v_q FROM ledger.queue q WHERE q.id = request_id FOR UPDATE;
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
            CASE WHEN v_q.trace_id IS NULL
                THEN json_build_object('actor', coalesce(v_principal, session_user::text), 'login_role', session_user,
                                       'correlation_id', request_id)
                ELSE json_build_object('actor', coalesce(v_principal, session_user::text), 'login_role', session_user,
                                       'correlation_id', request_id, 'trace_id', v_q.trace_id, 'span_id', v_q.trace_span_id) END)
    RETURNING "position" INTO v_pos;
    DELETE FROM ledger.queue WHERE id = request_id;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    PERFORM ledger.notify_done(v_req.principal, request_id);
    RETURN true;
END $$;


--
-- Name: claim_refusal(uuid, text, name, boolean); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN st_queue_state IS NULL AND st_final IS NULL THEN 'no such request'
        WHEN st_queue_state IS NULL THEN 'it has ended'
        WHEN st_queue_state = 'running' AND st_claimed_role IS DISTINCT FROM session_user
            THEN 'its claim is held by login role ' || coalesce(st_claimed_role::text, 'none') || ' under that claim id or another'
        WHEN st_queue_state = 'running' THEN 'claim ' || coalesce(st_claim::text, 'NULL') || ' is not its current claim, or its lease has not expired'
        ELSE 'it is ' || st_queue_state
    END
$$;


--
-- Name: claim_requests(text, integer, interval, boolean); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval, record_claims boolean DEFAULT true) RETURNS TABLE(id uuid, claim_id uuid, attempt integer, stream_version bigint, principal text, tool text, run_id text, input text, context text, context_bound text[], input_digest bytea, approved boolean, charged boolean, submitted_at timestamp with time zone, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    RETURN QUERY
    WITH picked AS (
        SELECT q.id FROM ledger.queue q
        WHERE q.state = 'pending' AND q.available_at <= clock_timestamp()
        ORDER BY q.priority DESC, q.available_at, q.id
        LIMIT max_requests
        FOR UPDATE SKIP LOCKED
    ), claimed AS (
        UPDATE ledger.queue q
        SET state = 'running', claimed_by = executor, claimed_role = session_user, claim_id = gen_random_uuid(),
            attempt = q.attempt + 1, lease_expires_at = clock_timestamp() + lease,
            stream_version = q.stream_version + CASE WHEN record_claims THEN 1 ELSE 0 END, started_at = NULL
        FROM picked WHERE q.id = picked.id
        RETURNING q.*
    ), appended AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'request:' || c.id, c.stream_version, 'request.claimed',
               json_build_object('request_id', c.id, 'executor', executor, 'claim_id', c.claim_id,
                                 'attempt', c.attempt, 'lease_expires_at', c.lease_expires_at),
               CASE WHEN c.trace_id IS NULL
                   THEN json_build_object('actor', executor, 'login_role', session_user, 'correlation_id', c.id)
                   ELSE json_build_object('actor', executor, 'login_role', session_user, 'correlation_id', c.id,
                                          'trace_id', c.trace_id, 'span_id', c.trace_span_id) END
        FROM claimed c
        WHERE record_claims
    )
    SELECT c.id, c.claim_id, c.attempt, c.stream_version, r.principal, r.tool, r.run_id,
           (e.payload -> 'input')::text, (e.payload -> 'context')::text,
           ARRAY(SELECT json_array_elements_text(coalesce(e.payload -> 'context_bound', '[]'::json))), r.input_digest,
           c.approved_digest IS NOT DISTINCT FROM r.input_digest, c.charged, r.submitted_at, c.lease_expires_at
    FROM claimed c
    JOIN ledger.request_status r ON r.id = c.id
    -- A lateral probe of (stream, version = 1), not a join: a plan kept
    -- from an empty ledger joined by version = 1 alone, reading every
    -- request's tool.requested at each claim (TestHotPlansIgnoreStatistics).
    JOIN LATERAL (SELECT e.payload FROM ledger.events e WHERE e.stream = 'request:' || c.id AND e.version = 1 LIMIT 1) e ON true
    ORDER BY c.priority DESC, c.available_at, c.id;
END $$;


--
-- Name: claim_state(uuid[], uuid[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[]) RETURNS TABLE(request_id uuid, claim_id uuid, queue_state text, claimed_role name, started boolean, final boolean, held boolean, lease_gone boolean, approval_gone boolean, unattested boolean)
    LANGUAGE sql STABLE
    AS $$
    SELECT k.req, k.claim, q.state, q.claimed_role, q.started_at IS NOT NULL,
           CASE WHEN r.id IS NOT NULL THEN r.finished_at IS NOT NULL END,
           coalesce(q.state = 'running' AND q.claim_id = k.claim AND q.claimed_role = session_user, false),
           coalesce(q.state = 'running' AND q.claim_id = k.claim AND q.lease_expires_at < clock_timestamp(), false),
           coalesce(q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp(), false),
           coalesce(q.id IS NULL AND r.finished_at IS NOT NULL AND r.attestation_digest IS NULL, false)
    FROM (SELECT DISTINCT ON (u.req) u.req, u.claim
          FROM unnest(request_ids, claim_ids) AS u(req, claim) ORDER BY u.req) k
    -- One primary-key lookup per request whatever the statistics say
    -- (LIMIT keeps the planner from turning these into table-wide joins).
    LEFT JOIN LATERAL (SELECT x.* FROM ledger.queue x WHERE x.id = k.req LIMIT 1) q ON true
    LEFT JOIN LATERAL (SELECT x.id, x.finished_at, x.attestation_digest FROM ledger.request_status x
                       WHERE x.id = k.req AND q.id IS NULL LIMIT 1) r ON true
$$;


--
-- Name: current_principal(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.current_principal() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p.principal FROM ledger.principals p WHERE p.login_role = session_user
$$;


--
-- Name: decide_approval(uuid, boolean, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
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
    SELECT q.state, q.stream_version, q.approved_digest, q.trace_id, q.trace_span_id INTO v_q FROM ledger.queue q WHERE q.id = p_request_id FOR UPDATE;
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
    -- The digest after the state: a request that may no longer be decided
    -- says so, whatever digest the approver gave.
    v_digest := 'sha256:' || encode(v_req.input_digest, 'hex');
    IF p_digest IS NOT NULL AND p_digest <> v_digest THEN
        RAISE EXCEPTION '%: request % has input %, not the % that was approved', v_op, p_request_id, v_digest, p_digest
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || p_request_id, v_q.stream_version + 1,
            CASE WHEN p_grant THEN 'approval.granted' ELSE 'approval.denied' END,
            json_build_object('request_id', p_request_id, 'approver', v_principal, 'note', p_note,
                              'input_digest', v_digest, 'reason', CASE WHEN p_grant THEN 'approved' ELSE 'denied_by_approver' END,
                              'previous_state', v_q.state, 'timeout_ms', NULL,
                              'error', CASE WHEN NOT p_grant THEN 'approval denied by ' || v_principal || coalesce(': ' || p_note, '') END),
            CASE WHEN v_q.trace_id IS NULL
                THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id)
                ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id,
                                       'trace_id', v_q.trace_id, 'span_id', v_q.trace_span_id) END)
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    IF p_grant THEN
        UPDATE ledger.queue
        SET state = 'pending', stream_version = stream_version + 1, approved_digest = v_req.input_digest,
            approval_expires_at = NULL,
            available_at = CASE WHEN v_q.state = 'awaiting_approval' THEN clock_timestamp() ELSE available_at END
        WHERE id = p_request_id;
        IF v_q.state = 'awaiting_approval' THEN
            PERFORM ledger.wake_waiters();
        END IF;
    ELSE
        DELETE FROM ledger.queue WHERE id = p_request_id;
        PERFORM ledger.notify_done(v_req.principal, p_request_id);
    END IF;
END $$;


--
-- Name: deny_approval(uuid, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.deny_approval(request_id uuid, note text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, false, note, NULL);
END $$;


--
-- Name: done_channel(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.done_channel(p_principal text) RETURNS text
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'on'
    AS $$
    SELECT 'ledger_done_' || left(encode(sha256(s.secret || sha256(s.secret || convert_to(p_principal, 'UTF8'))), 'hex'), 32)
    FROM ledger.notify_secret s
$$;


--
-- Name: end_run(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.end_run(run_id text, reason text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $_$
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
END $_$;


--
-- Name: event_hash(text, bigint, text, json, json, timestamp with time zone); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.event_hash(stream text, version bigint, type text, payload json, metadata json, recorded_at timestamp with time zone) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    s bytea := convert_to(stream, 'UTF8');
    t bytea := convert_to(type, 'UTF8');
    p bytea := convert_to(payload::text, 'UTF8');
    m bytea := convert_to(metadata::text, 'UTF8');
BEGIN
    RETURN sha256('execledger.event.v1'::bytea
        || int8send(length(s)::bigint) || s
        || int8send(version)
        || int8send(length(t)::bigint) || t
        || int8send(length(p)::bigint) || p
        || int8send(length(m)::bigint) || m
        || int8send((extract(epoch FROM recorded_at) * 1000000)::bigint));
END $$;


--
-- Name: event_partitions(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.event_partitions() RETURNS TABLE(name text, from_tx_id xid8, to_tx_id xid8, is_default boolean, first_tx_id xid8, first_position bigint, last_tx_id xid8, last_position bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    p record;
BEGIN
    FOR p IN
        SELECT c.relname::text AS relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'ledger.events'::regclass
    LOOP
        name := p.relname;
        is_default := p.bound = 'DEFAULT';
        from_tx_id := (regexp_match(p.bound, 'FROM \(''(\d+)''\)'))[1]::xid8;
        to_tx_id := (regexp_match(p.bound, 'TO \(''(\d+)''\)'))[1]::xid8;
        EXECUTE format('SELECT e.tx_id, e.position FROM ledger.%I e ORDER BY e.tx_id, e.position LIMIT 1', p.relname)
            INTO first_tx_id, first_position;
        EXECUTE format('SELECT e.tx_id, e.position FROM ledger.%I e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1', p.relname)
            INTO last_tx_id, last_position;
        RETURN NEXT;
    END LOOP;
END $$;


--
-- Name: FUNCTION event_partitions(); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.event_partitions() IS 'The partitions of ledger.events: tx_id bounds (NULL: unbounded), first and last event in delivery order.';


SET default_table_access_method = heap;

--
-- Name: event_archives; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.event_archives (
    id bigint NOT NULL,
    partition_name text NOT NULL,
    from_tx_id xid8 NOT NULL,
    to_tx_id xid8 NOT NULL,
    first_position bigint,
    last_position bigint,
    first_leaf bigint,
    last_leaf bigint,
    events bigint NOT NULL,
    checkpoint_size bigint,
    range_hashes bytea[],
    bundle_sha256 text,
    archived_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    archived_by text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT event_archives_bundle_sha256_check CHECK ((bundle_sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT event_archives_events_check CHECK ((events >= 0)),
    CONSTRAINT event_archives_leaves_check CHECK ((((events = 0) AND (first_leaf IS NULL) AND (last_leaf IS NULL) AND (checkpoint_size IS NULL) AND (range_hashes IS NULL) AND (bundle_sha256 IS NULL)) OR ((events > 0) AND (first_leaf >= 0) AND (((last_leaf - first_leaf) + 1) = events) AND (checkpoint_size > last_leaf) AND (range_hashes IS NOT NULL) AND (bundle_sha256 IS NOT NULL) AND (first_position IS NOT NULL) AND (last_position IS NOT NULL))))
);


--
-- Name: TABLE event_archives; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.event_archives IS 'Detached partitions of ledger.events: their leaves, the checkpoint their bundle was proved against, the bundle''s SHA-256.';


--
-- Name: events_archive_detach(text, bigint, bytea[], text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) RETURNS SETOF ledger.event_archives
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    a record;
    v_begin bigint;
    v_end bigint;
    v_level int;
    v_node bytea;
    i int := 0;
    r ledger.event_archives;
BEGIN
    SELECT * INTO a FROM ledger.events_archive_plan(p_partition);
    IF a.events > 0 THEN
        IF p_checkpoint_size IS NULL OR p_checkpoint_size <= a.last_leaf
           OR NOT EXISTS (SELECT 1 FROM ledger.checkpoints c WHERE c.size = p_checkpoint_size) THEN
            RAISE EXCEPTION 'ledger.events_archive_detach: % has leaves % to %; checkpoint % is not one of the log''s that covers them',
                p_partition, a.first_leaf, a.last_leaf, coalesce(p_checkpoint_size::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_begin := a.first_leaf;
        v_end := a.last_leaf + 1;
        WHILE v_begin < v_end LOOP
            v_level := 0;
            WHILE v_level < 62 AND v_begin % (2::bigint << v_level) = 0 AND v_begin + (2::bigint << v_level) <= v_end LOOP
                v_level := v_level + 1;
            END LOOP;
            i := i + 1;
            SELECT n.hash INTO v_node FROM ledger.log_nodes n WHERE n.level = v_level AND n.idx = v_begin >> v_level;
            IF v_node IS NULL OR i > coalesce(cardinality(p_range_hashes), 0) OR p_range_hashes[i] IS DISTINCT FROM v_node THEN
                RAISE EXCEPTION 'ledger.events_archive_detach: the range hashes of leaves % to % are not the tree''s (node % at level %)',
                    a.first_leaf, a.last_leaf, v_begin >> v_level, v_level
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            v_begin := v_begin + (1::bigint << v_level);
        END LOOP;
        IF i <> cardinality(p_range_hashes) THEN
            RAISE EXCEPTION 'ledger.events_archive_detach: % range hashes for leaves % to %, which have %', cardinality(p_range_hashes), a.first_leaf, a.last_leaf, i
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF p_checkpoint_size IS NOT NULL OR p_range_hashes IS NOT NULL OR p_bundle_sha256 IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.events_archive_detach: % holds no event: it is detached with no bundle', p_partition
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.event_archives (partition_name, from_tx_id, to_tx_id, first_position, last_position, first_leaf, last_leaf,
                                       events, checkpoint_size, range_hashes, bundle_sha256)
    VALUES (p_partition, coalesce(a.from_tx_id, '0'), a.to_tx_id, a.first_position, a.last_position, a.first_leaf, a.last_leaf,
            a.events, p_checkpoint_size, p_range_hashes, p_bundle_sha256)
    RETURNING * INTO r;
    EXECUTE format('ALTER TABLE ledger.events DETACH PARTITION ledger.%I', p_partition);
    RETURN NEXT r;
END $$;


--
-- Name: FUNCTION events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) IS 'Records the archive of a closed partition of ledger.events (ledger.event_archives) and detaches it.';


--
-- Name: events_archive_plan(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.events_archive_plan(p_partition text) RETURNS TABLE(partition_name text, from_tx_id xid8, to_tx_id xid8, first_position bigint, last_position bigint, first_leaf bigint, last_leaf bigint, events bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    p record;
    v_xmin xid8 := pg_snapshot_xmin(pg_current_snapshot());
    v_proj record;
    v_unsealed bigint;
BEGIN
    SELECT * INTO p FROM ledger.event_partitions() x WHERE x.name = p_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is not a partition of ledger.events', coalesce(p_partition, 'NULL')
            USING ERRCODE = 'no_data_found', HINT = 'execledger archive --list lists them';
    END IF;
    IF p.is_default THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is the default partition, which no range of transactions bounds; it is never archived', p_partition
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF p.to_tx_id > v_xmin THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is not closed: transactions up to % may still write into it (the oldest running transaction is %)',
            p_partition, p.to_tx_id, v_xmin
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'archive it once the transaction ids in use have passed its range';
    END IF;
    partition_name := p_partition;
    from_tx_id := p.from_tx_id;
    to_tx_id := p.to_tx_id;
    events := 0;
    IF p.first_tx_id IS NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT x.name, x.mode, x.tx_id, x.position, x.rebuild_tx_id, x.rebuild_position INTO v_proj
    FROM ledger.projections x
    WHERE x.mode IN ('async', 'sealer')
      AND ((x.tx_id, x.position) < (p.last_tx_id, p.last_position)
           OR x.rebuild_tx_id IS NOT NULL AND (x.rebuild_tx_id, x.rebuild_position) < (p.last_tx_id, p.last_position))
    ORDER BY x.name
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is not closed: % has not read past its last event (transaction %, position %)',
            p_partition,
            CASE WHEN v_proj.mode = 'sealer' THEN 'the Merkle log''s sealer (projection ' || v_proj.name || ')'
                 WHEN v_proj.rebuild_tx_id IS NOT NULL THEN 'the rebuild of projection ' || v_proj.name
                 ELSE 'projection ' || v_proj.name END,
            p.last_tx_id, p.last_position
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'execledger projector status shows how far each has read';
    END IF;
    first_position := p.first_position;
    last_position := p.last_position;
    SELECT l.leaf_index INTO first_leaf FROM ledger.log_leaves l WHERE l.position = p.first_position AND l.tx_id = p.first_tx_id;
    SELECT l.leaf_index INTO last_leaf FROM ledger.log_leaves l WHERE l.position = p.last_position AND l.tx_id = p.last_tx_id;
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
        SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id)) FROM ledger.%I e', p_partition)
        INTO events, v_unsealed;
    IF first_leaf IS NULL OR last_leaf IS NULL OR v_unsealed > 0 OR last_leaf - first_leaf + 1 <> events THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % holds % events, % of them not in the Merkle log, though the sealer has passed them (fault unsealed_event): it is not archived',
            p_partition, events, v_unsealed
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'execledger verify --db names them';
    END IF;
    RETURN NEXT;
END $$;


--
-- Name: FUNCTION events_archive_plan(p_partition text); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.events_archive_plan(p_partition text) IS 'Whether a partition of ledger.events is closed, and the leaves it holds; raises the reason when it is not.';


--
-- Name: events_between(xid8, bigint, xid8, bigint, text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) RETURNS SETOF ledger.projected_event
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
      AND e.tx_id >= p_from_tx AND e.tx_id <= p_to_tx AND e.type = ANY(p_types)
      AND (c.c_tx IS NULL OR (e.tx_id, e.position) > (c.c_tx, c.c_pos)
           OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id))
$$;


--
-- Name: events_in_tx(xid8, bigint, bigint, text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.events_in_tx(p_tx xid8, p_from_pos bigint, p_to_pos bigint, p_types text[]) RETURNS SETOF ledger.projected_event
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    WHERE e.tx_id = p_tx AND e.position > p_from_pos AND e.position <= p_to_pos AND e.type = ANY(p_types)
$$;


--
-- Name: events_partition_ahead(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.events_partition_ahead() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '2s'
    AS $$
DECLARE
    v_width numeric;
    v_ahead int;
    v_next numeric := pg_snapshot_xmax(pg_current_snapshot())::text::numeric;
    v_top numeric;
    v_default numeric;
    v_lo numeric;
    v_hi numeric;
    v_name text;
    v_made int := 0;
BEGIN
    SELECT s.width, s.ahead INTO v_width, v_ahead FROM ledger.event_partitioning s;
    LOOP
        SELECT max(p.to_tx_id::text::numeric) INTO v_top FROM ledger.event_partitions() p WHERE NOT p.is_default;
        EXIT WHEN v_top >= v_next + v_ahead * v_width;
        SELECT max(e.tx_id)::text::numeric INTO v_default FROM ledger.events_default e;
        -- No transaction below the oldest running one writes again:
        -- a range that starts there leaves out only ids that are done.
        v_lo := greatest(v_top, coalesce(v_default + 1, 0), pg_snapshot_xmin(pg_current_snapshot())::text::numeric);
        -- Ranges end at multiples of the width, so the partitions a call
        -- makes do not depend on the moment it runs within a width.
        v_hi := (floor(v_lo / v_width) + 1) * v_width;
        v_name := 'events_' || v_lo::text;
        BEGIN
            EXECUTE format('CREATE TABLE ledger.%I (LIKE ledger.events INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)', v_name);
            EXECUTE format('ALTER TABLE ledger.%I ADD CONSTRAINT %I CHECK (tx_id >= %L::xid8 AND tx_id < %L::xid8)',
                           v_name, v_name || '_bound', v_lo::text, v_hi::text);
            EXECUTE format('CREATE INDEX %I ON ledger.%I (stream, version)', v_name || '_stream_idx', v_name);
            EXECUTE format('CREATE UNIQUE INDEX %I ON ledger.%I (tx_id, position)', v_name || '_delivery_idx', v_name);
            EXECUTE format('REVOKE ALL ON ledger.%I FROM PUBLIC', v_name);
            EXECUTE format('ALTER TABLE ledger.events ATTACH PARTITION ledger.%I FOR VALUES FROM (%L) TO (%L)',
                           v_name, v_lo::text, v_hi::text);
            EXECUTE format('ALTER TABLE ledger.%I DROP CONSTRAINT %I', v_name, v_name || '_bound');
        EXCEPTION WHEN lock_not_available THEN
            RETURN v_made;
        END;
        v_made := v_made + 1;
    END LOOP;
    RETURN v_made;
END $$;


--
-- Name: FUNCTION events_partition_ahead(); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.events_partition_ahead() IS 'Creates the range partitions of ledger.events needed next (ledger.event_partitioning); returns how many.';


--
-- Name: executor_record(uuid[], uuid[], text[], bigint[], text[], text[], text[], text[], boolean[], text[], text[], text[], text[], text[], interval); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval DEFAULT NULL::interval) RETURNS TABLE("position" bigint, hash bytea)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
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
    v_at   timestamptz[];
    v_fast boolean;
    v_n    bigint;
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
                WHEN a.type NOT IN ('request.decided', 'policy.decided', 'budget.consumed', 'execution.started', 'approval.requested',
                                    'execution.finished', 'execution.completed', 'request.cancelled', 'egress.connection',
                                    'capability.used', 'channel.published', 'channel.message', 'lease.expired', 'approval.denied',
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
        WHEN a.type IN ('request.decided', 'policy.decided', 'budget.consumed', 'execution.started', 'approval.requested',
                        'execution.finished', 'execution.completed', 'request.cancelled', 'egress.connection',
                        'capability.used', 'channel.published', 'channel.message') THEN st.held
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

    -- One row per request: its outcome, its new head, its last event and
    -- its request.decided in the call, for finish and attest its
    -- attestation, each payload parsed once, and, when the call's events
    -- say what the read model becomes in the compact grammar's few common
    -- ways (fast), the row they give.
    SELECT array_agg(ROW(k.req, k.kind, coalesce(k.charge, false), k.state, k.error_kind, k.error, k.output, k.tier,
                         r.principal, r.run_id,
                         coalesce(last.version, (SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'request:' || k.req)),
                         att.digest, last.ord, dec.ord, dec.pj ->> 'verdict',
                         coalesce(CASE
                             WHEN k.kind = 'start' THEN dec.pj ->> 'verdict' = 'run' AND rel.types <@ ARRAY['request.decided']
                             WHEN k.kind = 'await_approval' THEN dec.pj ->> 'verdict' = 'await_approval'
                                  AND rel.types <@ ARRAY['request.decided', 'approval.requested'] AND 'approval.requested' = ANY(rel.types)
                             WHEN k.kind = 'finish' AND last.type = 'execution.completed'
                                  THEN rel.types <@ ARRAY['request.decided', 'execution.completed']
                                       AND coalesce(dec.pj ->> 'verdict', 'run') = 'run'
                             WHEN k.kind = 'finish' AND dec.pj ->> 'verdict' = 'deny' THEN rel.types <@ ARRAY['request.decided', 'attestation.signed']
                             WHEN k.kind IS NULL THEN rel.types IS NULL
                         END, false),
                         CASE WHEN k.kind = 'start' THEN 'running'
                              WHEN k.kind = 'await_approval' THEN 'awaiting_approval'
                              WHEN k.kind = 'finish' AND last.type = 'execution.completed' THEN att.pj ->> 'state'
                              WHEN k.kind = 'finish' THEN 'denied' END,
                         CASE WHEN last.type = 'execution.completed' THEN att.pj ->> 'error_kind' ELSE dec.pj ->> 'error_kind' END,
                         CASE WHEN last.type = 'execution.completed' THEN att.pj ->> 'error' ELSE dec.pj ->> 'message' END,
                         CASE WHEN last.type = 'execution.completed' THEN nullif(att.pj -> 'output', 'null'::jsonb) END,
                         CASE WHEN last.type = 'execution.completed' THEN att.pj ->> 'tier' END,
                         coalesce(b.c, 0) + CASE WHEN dec.pj ? 'budget' THEN 1 ELSE 0 END,
                         CASE WHEN last.type = 'execution.completed' THEN ledger.usage_refusal('execution.finished', att.pj) END
                         )::ledger.executor_record_row ORDER BY k.ord),
           (array_agg(k.req ORDER BY k.ord) FILTER (WHERE k.kind IN ('finish', 'attest') AND (
                last.type IS NULL OR last.type NOT IN ('attestation.signed', 'execution.completed') OR att.digest IS NULL
                OR (k.kind = 'finish' AND (
                    k.state IS NULL OR k.state NOT IN ('succeeded', 'failed', 'denied', 'cancelled')
                    OR (k.state = 'succeeded') <> (k.error_kind IS NULL)
                    OR att.pred ->> 'success' IS DISTINCT FROM (k.state = 'succeeded')::text
                    OR coalesce(att.pred ->> 'error_kind', '') <> coalesce(k.error_kind, '')
                    OR (last.type = 'execution.completed' AND (att.pj ->> 'state' IS DISTINCT FROM k.state
                                                               OR att.pj ->> 'error_kind' IS DISTINCT FROM k.error_kind))
                    OR (last.type = 'attestation.signed' AND dec.pj ->> 'verdict' = 'deny'
                        AND (k.state <> 'denied' OR dec.pj ->> 'error_kind' IS DISTINCT FROM k.error_kind)))))))[1]
    INTO v_rows, v_bad
    FROM unnest(claim_requests, kinds, charges, states, error_kinds, errors, outputs, tiers)
        WITH ORDINALITY AS k(req, kind, charge, state, error_kind, error, output, tier, ord)
    JOIN LATERAL (SELECT x.principal, x.run_id FROM ledger.request_status x WHERE x.id = k.req LIMIT 1) r ON true
    LEFT JOIN (
        SELECT DISTINCT ON (e.s) e.s, e.ord, v_vers[e.ord] AS version, e.t AS type, e.p AS payload
        FROM unnest(streams, types, payloads) WITH ORDINALITY AS e(s, t, p, ord)
        ORDER BY e.s, e.ord DESC
    ) last ON last.s = 'request:' || k.req
    LEFT JOIN (
        SELECT DISTINCT ON (e.s) e.s, e.ord, e.p::jsonb AS pj
        FROM unnest(streams, types, payloads) WITH ORDINALITY AS e(s, t, p, ord)
        WHERE e.t = 'request.decided'
        ORDER BY e.s, e.ord DESC
    ) dec ON dec.s = 'request:' || k.req
    LEFT JOIN (
        -- The types of the call's events on each stream that the request
        -- read model reads (ledger.apply_requests's).
        SELECT u.s, array_agg(DISTINCT u.t) AS types
        FROM unnest(streams, types) AS u(s, t)
        WHERE u.t IN ('tool.requested', 'request.decided', 'policy.decided', 'approval.requested', 'approval.granted',
                      'approval.denied', 'execution.started', 'execution.finished', 'execution.completed', 'request.cancelled',
                      'lease.expired', 'attestation.signed')
        GROUP BY u.s
    ) rel ON rel.s = 'request:' || k.req
    LEFT JOIN (SELECT u.s, count(*) AS c FROM unnest(streams, types) AS u(s, t) WHERE u.t = 'budget.consumed' GROUP BY u.s) b
           ON b.s = 'request:' || k.req
    LEFT JOIN LATERAL (
        SELECT CASE WHEN j.named = k.req::text AND j.pred ->> 'request_id' = k.req::text
                         AND j.digest = 'sha256:' || encode(sha256(convert_to(j.envelope, 'UTF8')), 'hex')
                    THEN j.digest END AS digest,
               j.pred, j.pj
        FROM (SELECT x.pj, x.pj ->> 'request_id' AS named, x.pj ->> 'attestation_digest' AS digest, x.pj ->> 'envelope' AS envelope,
                     (convert_from(decode((x.pj ->> 'envelope')::json ->> 'payload', 'base64'), 'UTF8')::jsonb) -> 'predicate' AS pred
              FROM (SELECT last.payload::jsonb AS pj OFFSET 0) x
              OFFSET 0) j
        WHERE k.kind IN ('finish', 'attest') AND last.type IN ('attestation.signed', 'execution.completed')
    ) att ON true;
    IF v_bad IS NOT NULL THEN
        SELECT t.id, t.kind, t.state INTO bad FROM unnest(v_rows) t WHERE t.id = v_bad LIMIT 1;
        RAISE EXCEPTION 'ledger.executor_record: request % cannot %: its last event in the call must be an attestation.signed or execution.completed that names it (in the event and in its statement), carries its envelope''s digest and agrees with the outcome and error kind',
            bad.id, CASE WHEN bad.kind = 'finish' THEN 'end ' || coalesce(bad.state, 'NULL') ELSE 'be attested' END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Usage figures: those of each request's last execution.completed were
    -- checked from its parsed payload above, the others here.
    SELECT u.t AS type, u.s AS stream, coalesce(t.refusal, ledger.usage_refusal(u.t, u.p)) AS why INTO bad
    FROM unnest(types, payloads, streams) WITH ORDINALITY AS u(t, p, s, ord)
    LEFT JOIN unnest(v_rows) t ON t.last_ord = u.ord AND u.t = 'execution.completed' AND t.digest IS NOT NULL
    WHERE u.t IN ('execution.finished', 'execution.completed', 'egress.connection')
      AND CASE WHEN t.id IS NOT NULL THEN t.refusal IS NOT NULL ELSE ledger.usage_refusal(u.t, u.p) IS NOT NULL END
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: % on % refused: %', bad.type, bad.stream, bad.why
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A call is charged to its run's budget by its budget.consumed event,
    -- or its request.decided's budget member, which only the start of a
    -- charged call of a run carries, once: a start, or a finish in the
    -- claim's own call (a call run inline, recorded with its decision).
    SELECT t.id INTO v_bad
    FROM unnest(v_rows) t
    JOIN ledger.queue q ON q.id = t.id
    WHERE t.budget_events <> CASE WHEN t.kind IN ('start', 'finish') AND t.charge AND t.run_id IS NOT NULL AND NOT q.charged THEN 1 ELSE 0 END
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: request % must have one budget.consumed (or request.decided with a budget) exactly when its start is charged to its run for the first time', v_bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT array_agg(i.position), array_agg(i.hash), array_agg(i.recorded_at) INTO v_pos, v_hash, v_at
    FROM ledger.insert_events(streams, v_vers, types, payloads, metadatas) i;
    RETURN QUERY SELECT u.p, u.h FROM unnest(v_pos, v_hash) AS u(p, h);
    v_fast := (SELECT bool_and(t.fast) FROM unnest(v_rows) t) AND NOT 'budget.consumed' = ANY(types);
    IF v_fast THEN
        -- The rows the events give, from what this call holds.
        UPDATE ledger.request_status r
        SET state = t.r_state,
            error_kind = CASE WHEN t.kind = 'finish' THEN t.r_error_kind ELSE r.error_kind END,
            error = CASE WHEN t.kind = 'finish' THEN t.r_error ELSE r.error END,
            output = CASE WHEN t.kind = 'finish' THEN t.r_output ELSE r.output END,
            tier = CASE WHEN t.kind = 'finish' THEN t.r_tier ELSE r.tier END,
            finished_at = CASE WHEN t.kind <> 'finish' THEN r.finished_at
                               WHEN t.verdict = 'deny' THEN v_at[t.decided_ord] ELSE v_at[t.last_ord] END,
            attestation_digest = coalesce(t.digest, r.attestation_digest)
        FROM unnest(v_rows) t
        -- id = ANY: the rows are probes of the primary key whatever plan
        -- the join keeps (a plan made while the table was empty walked
        -- all of it).
        WHERE r.id = ANY(ARRAY(SELECT x.id FROM unnest(v_rows) x WHERE x.kind IS NOT NULL))
          AND r.id = t.id AND t.kind IS NOT NULL AND r.finished_at IS NULL;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n <> (SELECT count(*) FROM unnest(v_rows) t WHERE t.kind IS NOT NULL) THEN
            RAISE EXCEPTION 'ledger.executor_record: a request the call changes has ended already'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        -- The runs the starts are charged to (ledger.apply_runs's rows for
        -- request.decided with a budget).
        INSERT INTO ledger.runs AS x (principal, run_id, max_calls, used, version, created_at, ended_at)
        SELECT t.principal, t.run_id, NULL, count(*), 0, min(v_at[t.decided_ord]), NULL
        FROM unnest(v_rows) t WHERE t.budget_events = 1
        GROUP BY t.principal, t.run_id ORDER BY t.principal, t.run_id
        ON CONFLICT (principal, run_id) DO UPDATE
        SET used = x.used + EXCLUDED.used, created_at = least(x.created_at, EXCLUDED.created_at);
    ELSE
        SELECT min(u), max(u) INTO v_lo, v_hi FROM unnest(v_pos) u;
        IF v_lo IS NOT NULL THEN
            PERFORM ledger.apply_requests(pg_current_xact_id(), v_lo - 1, pg_current_xact_id(), v_hi);
            IF 'budget.consumed' = ANY(types) OR 'request.decided' = ANY(types) THEN
                PERFORM ledger.apply_runs(pg_current_xact_id(), v_lo - 1, pg_current_xact_id(), v_hi);
            END IF;
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
            lease_expires_at = NULL, started_at = NULL
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'requeue';
    END IF;
    IF 'finish' = ANY(kinds) THEN
        DELETE FROM ledger.queue q USING unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'finish';
    END IF;
    -- The request read model now says what the events say; it must be
    -- the state change the call asked for. (The fast path wrote the rows
    -- from what it checked: nothing to plan or read here.)
    IF NOT v_fast THEN
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
                      HINT = 'request.decided or execution.started, approval.requested, lease.expired (requeued), a final event and its attestation make those changes';
        END IF;
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


--
-- Name: heartbeat(uuid[], uuid[], interval); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) RETURNS TABLE(id uuid, cancel_requested boolean)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    WITH held AS (
        SELECT q.id FROM ledger.queue q
        JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
        WHERE q.id = ANY(request_ids) AND q.claimed_role = session_user
        ORDER BY q.id
        FOR UPDATE OF q
    )
    UPDATE ledger.queue q SET lease_expires_at = clock_timestamp() + lease
    FROM held WHERE q.id = held.id
    RETURNING q.id, q.cancel_requested
$$;


--
-- Name: in_record(xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT p_tx < pg_snapshot_xmax(pg_current_snapshot())
       AND ((p_tx, p_pos) > (SELECT p.tx_id, p.position FROM ledger.projections p WHERE p.name = 'log')
            OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = p_pos AND l.tx_id = p_tx))
$$;


--
-- Name: FUNCTION in_record(p_tx xid8, p_pos bigint); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) IS 'Whether an event may be presented as the record: a leaf, or not yet passed by the sealer.';


--
-- Name: insert_events(text[], bigint[], text[], text[], text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) RETURNS TABLE("position" bigint, hash bytea, recorded_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    n int := cardinality(streams);
    bad record;
BEGIN
    IF n IS NULL OR n = 0 THEN
        RETURN;
    END IF;
    IF cardinality(versions) IS DISTINCT FROM n OR cardinality(types) IS DISTINCT FROM n
       OR cardinality(payloads) IS DISTINCT FROM n OR cardinality(metadatas) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'ledger.append_events: the five arrays must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Versions within a stream must be consecutive in the batch, and the
    -- first must follow the stream's stored head.
    SELECT b.stream, b.first, b.cnt, b.last INTO bad
    FROM (
        SELECT s AS stream, min(v) AS first, max(v) AS last, count(*) AS cnt, count(DISTINCT v) AS dcnt
        FROM unnest(streams, versions) AS u(s, v)
        GROUP BY s
    ) b
    LEFT JOIN LATERAL (
        SELECT true AS found FROM ledger.events e
        WHERE e.stream = b.stream AND e.version = b.first - 1
        LIMIT 1
    ) head ON b.first > 1
    WHERE b.first < 1
       OR b.last - b.first + 1 <> b.cnt
       OR b.dcnt <> b.cnt
       OR (b.first > 1 AND head.found IS NULL)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.append_events: stream % is not at version %', bad.stream, bad.first - 1
            USING ERRCODE = 'serialization_failure',
                  DETAIL = format('stream=%s expected_version=%s', bad.stream, bad.first - 1);
    END IF;

    RETURN QUERY
    INSERT INTO ledger.events AS e (stream, version, type, payload, metadata)
    SELECT u.s, u.v, u.t, u.p::json, u.m::json
    FROM unnest(streams, versions, types, payloads, metadatas) WITH ORDINALITY AS u(s, v, t, p, m, ord)
    ORDER BY u.ord
    RETURNING e.position, e.hash, e.recorded_at;
END $$;


--
-- Name: is_int64(jsonb); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.is_int64(v jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_typeof(v) = 'number' AND v::numeric = trunc(v::numeric)
           AND v::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
$$;


--
-- Name: legacy_done_ids(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.legacy_done_ids() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce(current_setting('execledger.legacy_done_ids', true), '') IN ('on', 'true', '1')
$$;


--
-- Name: lock_claimed_budgets(uuid[], uuid[], integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) RETURNS TABLE(principal text, run_id text, max_calls integer, used integer, ended boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
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


--
-- Name: lock_claims(uuid[], uuid[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) RETURNS TABLE(id uuid, stream_version bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT q.id, q.stream_version FROM ledger.queue q
    JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
    WHERE q.claimed_role = session_user
    ORDER BY q.id
    FOR UPDATE OF q
$$;


--
-- Name: lock_expired_approvals(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_expired_approvals(max_rows integer) RETURNS TABLE(id uuid, stream_version bigint, tool text, principal text, run_id text, input_digest bytea)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT q.id, q.stream_version, r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp()
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;


--
-- Name: lock_expired_leases(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_expired_leases(max_rows integer) RETURNS TABLE(id uuid, claim_id uuid, attempt integer, claimed_by text, stream_version bigint, started boolean, cancel_requested boolean, tool text, principal text, run_id text, input_digest bytea)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT q.id, q.claim_id, q.attempt, q.claimed_by, q.stream_version, q.started_at IS NOT NULL, q.cancel_requested,
           r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'running' AND q.lease_expires_at < clock_timestamp()
    ORDER BY q.lease_expires_at
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;


--
-- Name: lock_unattested(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_unattested(max_rows integer) RETURNS TABLE(id uuid, tool text, principal text, run_id text, state text, error_kind text, error text, input_digest bytea, submitted_at timestamp with time zone, finished_at timestamp with time zone, stream_version bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT r.id, r.tool, r.principal, coalesce(r.run_id, ''), r.state, coalesce(r.error_kind, ''),
           coalesce(r.error, ''), r.input_digest, r.submitted_at, r.finished_at,
           (SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'request:' || r.id)
    FROM ledger.request_status r
    WHERE r.attestation_digest IS NULL AND r.finished_at IS NOT NULL
    ORDER BY r.finished_at
    LIMIT max_rows
    FOR UPDATE OF r SKIP LOCKED
$$;


--
-- Name: log_append(xid8, bigint, xid8, bigint, bigint, smallint[], bigint[], bytea[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    n       bigint;
    n_leaf  bigint;
    v_lo    bigint;
    v_hi    bigint;
BEGIN
    IF (p_to_tx, p_to_pos) <= (p_from_tx, p_from_pos) THEN
        RAISE EXCEPTION 'ledger.log_append: the batch must move forward, from (%, %) to (%, %)', p_from_tx, p_from_pos, p_to_tx, p_to_pos
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_to_tx >= pg_snapshot_xmin(pg_current_snapshot()) THEN
        RAISE EXCEPTION 'ledger.log_append: (%, %) is not below the delivery horizon yet', p_to_tx, p_to_pos
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE ledger.projections p
    SET tx_id = p_to_tx, position = p_to_pos, updated_at = clock_timestamp()
    WHERE p.name = 'log' AND p.state = 'active' AND p.tx_id = p_from_tx AND p.position = p_from_pos;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.log_append: the log is not active at (%, %)', p_from_tx, p_from_pos
            USING ERRCODE = 'serialization_failure';
    END IF;
    IF ledger.log_size() <> p_size THEN
        RAISE EXCEPTION 'ledger.log_append: the log has % leaves, not %', ledger.log_size(), p_size
            USING ERRCODE = 'serialization_failure';
    END IF;

    INSERT INTO ledger.log_leaves (leaf_index, tx_id, "position")
    SELECT p_size - 1 + row_number() OVER (ORDER BY e.tx_id, e.position), e.tx_id, e.position
    FROM ledger.events e
    WHERE e.tx_id BETWEEN p_from_tx AND p_to_tx
      AND (e.tx_id, e.position) > (p_from_tx, p_from_pos)
      AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos);
    GET DIAGNOSTICS n = ROW_COUNT;

    IF cardinality(p_levels) IS DISTINCT FROM cardinality(p_indexes) OR cardinality(p_levels) IS DISTINCT FROM cardinality(p_hashes) THEN
        RAISE EXCEPTION 'ledger.log_append: levels, indexes and hashes must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT count(*) FILTER (WHERE u.l = 0), min(u.i) FILTER (WHERE u.l = 0), max(u.i) FILTER (WHERE u.l = 0)
    INTO n_leaf, v_lo, v_hi
    FROM unnest(p_levels, p_indexes) AS u(l, i);
    IF n = 0 OR n_leaf <> n OR v_lo <> p_size OR v_hi <> p_size + n - 1 THEN
        RAISE EXCEPTION 'ledger.log_append: % events follow (%, %) up to (%, %), the batch has % leaf hashes for leaves % to %',
            n, p_from_tx, p_from_pos, p_to_tx, p_to_pos, n_leaf, v_lo, v_hi
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.log_nodes (level, idx, hash)
    SELECT u.l, u.i, u.h FROM unnest(p_levels, p_indexes, p_hashes) AS u(l, i, h);

    UPDATE ledger.projections SET applied_total = applied_total + n WHERE name = 'log';
    RETURN p_size + n;
END $$;


--
-- Name: log_checkpoint(bigint, bytea, text, boolean); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_origin text := split_part(p_note, E'\n', 1);
    v_last   bigint;
    v_ver    bigint;
BEGIN
    PERFORM 1 FROM ledger.projections p WHERE p.name = 'log' FOR UPDATE;
    SELECT max(c.size) INTO v_last FROM ledger.checkpoints c;
    IF p_size < 1 OR p_size > ledger.log_size() OR p_size <= coalesce(v_last, 0) THEN
        RAISE EXCEPTION 'ledger.log_checkpoint: size % is not between the last checkpoint''s (%) and the log''s (%)',
            p_size, coalesce(v_last, 0), ledger.log_size()
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF split_part(p_note, E'\n', 2) <> p_size::text OR split_part(p_note, E'\n', 3) <> encode(p_root, 'base64') THEN
        RAISE EXCEPTION 'ledger.log_checkpoint: the note does not carry size % and its root hash', p_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.checkpoints (size, root_hash, origin, note, published_at)
    VALUES (p_size, p_root, v_origin, p_note, CASE WHEN p_published THEN clock_timestamp() END);
    SELECT coalesce(max(e.version), 0) + 1 INTO v_ver FROM ledger.events e WHERE e.stream = 'log';
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('log', v_ver, 'checkpoint.signed',
            json_build_object('origin', v_origin, 'size', p_size, 'root_hash', encode(p_root, 'base64'), 'note', p_note),
            json_build_object('actor', session_user));
    RETURN v_ver;
END $$;


--
-- Name: log_cosign(bigint, text, bigint, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM 1 FROM ledger.checkpoints c WHERE c.size = p_size FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.log_cosign: no checkpoint of size %', p_size USING ERRCODE = 'no_data_found';
    END IF;
    IF (SELECT count(*) FROM ledger.checkpoint_cosignatures s WHERE s.size = p_size) >= 64 THEN
        RAISE EXCEPTION 'ledger.log_cosign: checkpoint % has 64 cosignatures already', p_size USING ERRCODE = 'program_limit_exceeded';
    END IF;
    INSERT INTO ledger.checkpoint_cosignatures (size, key_name, key_hash, signature)
    VALUES (p_size, p_key_name, p_key_hash, p_signature)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n = 1;
END $$;


--
-- Name: log_publish(bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.log_publish(p_size bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    UPDATE ledger.checkpoints SET published_at = clock_timestamp() WHERE size = p_size AND published_at IS NULL;
    RETURN FOUND;
END $$;


--
-- Name: log_record_faults(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_ver bigint;
BEGIN
    PERFORM 1 FROM ledger.projections p WHERE p.name = 'log' FOR UPDATE;
    SELECT coalesce(max(e.version), 0) INTO v_ver FROM ledger.events e WHERE e.stream = 'log';
    WITH found AS MATERIALIZED (
        SELECT * FROM ledger.unsealed_events(1000)
    ), fresh AS (
        INSERT INTO ledger.log_faults (tx_id, "position", stream, version, type, reason)
        SELECT u.tx_id, u.position, u.stream, u.version, u.type, u.reason FROM found u
        ON CONFLICT DO NOTHING
        RETURNING *
    ), appended AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'log', v_ver + row_number() OVER (ORDER BY f.tx_id, f.position), 'log.unsealed_event',
               json_build_object('tx_id', f.tx_id::text, 'position', f.position, 'stream', f.stream, 'version', f.version,
                                 'type', f.type, 'reason', f.reason),
               json_build_object('actor', session_user)
        FROM fresh f
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM appended), (SELECT count(*) FROM found) INTO recorded, present;
END $$;


--
-- Name: log_size(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.log_size() RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce((SELECT l.leaf_index + 1 FROM ledger.log_leaves l ORDER BY l.leaf_index DESC LIMIT 1), 0)
$$;


--
-- Name: mcp_login_refusal(name); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.mcp_login_refusal(p_login name) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE
        WHEN r.oid IS NULL THEN format('no login role %I', p_login)
        WHEN NOT r.rolcanlogin THEN format('role %I cannot log in', p_login)
        WHEN r.rolsuper OR r.rolbypassrls THEN format('role %I is a superuser or bypasses row security', p_login)
        WHEN pg_has_role(r.oid, 'ledger_executor', 'MEMBER') OR pg_has_role(r.oid, 'ledger_admin', 'MEMBER')
          OR pg_has_role(r.oid, 'ledger_skill_admin', 'MEMBER')
            THEN format('role %I is an executor, admin or skill admin: a token may act only as a submitter', p_login)
        WHEN NOT EXISTS (SELECT 1 FROM ledger.principals p WHERE p.login_role = p_login)
            THEN format('role %I is not mapped to a principal (ledger.principals)', p_login)
    END
    FROM (SELECT 1) one LEFT JOIN pg_roles r ON r.rolname = p_login
$$;


--
-- Name: mcp_token_create(text, bytea, name, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.mcp_token_create(p_token_id text, p_sha256 bytea, p_login name, p_note text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    why text := ledger.mcp_login_refusal(p_login);
BEGIN
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'mcp token: %', why USING ERRCODE = '22023';
    END IF;
    INSERT INTO ledger.mcp_tokens (token_id, token_sha256, login_role, note)
    VALUES (p_token_id, p_sha256, p_login, nullif(p_note, ''));
END
$$;


--
-- Name: mcp_token_login(bytea); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.mcp_token_login(p_sha256 bytea) RETURNS name
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT t.login_role FROM ledger.mcp_tokens t
    WHERE t.token_sha256 = p_sha256 AND t.revoked_at IS NULL AND ledger.mcp_login_refusal(t.login_role) IS NULL
$$;


--
-- Name: mcp_token_revoke(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.mcp_token_revoke(p_token_id text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH r AS (
        UPDATE ledger.mcp_tokens SET revoked_at = clock_timestamp(), revoked_by = session_user
        WHERE token_id = p_token_id AND revoked_at IS NULL
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM r)
$$;


--
-- Name: notify_channel(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.notify_channel() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT ledger.done_channel(ledger.current_principal())
$$;


--
-- Name: notify_done(text, uuid); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_notify(ledger.done_channel(p_principal), p_request_id::text);
    PERFORM pg_notify('ledger_request_done', CASE WHEN ledger.legacy_done_ids() THEN p_request_id::text ELSE '' END);
END $$;


--
-- Name: process_record(uuid, text[], text[], text[], uuid, text, text, integer, integer, jsonb); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid DEFAULT NULL::uuid, p_state text DEFAULT NULL::text, p_end_reason text DEFAULT NULL::text, p_exit_code integer DEFAULT NULL::integer, p_signal integer DEFAULT NULL::integer, p_result jsonb DEFAULT NULL::jsonb) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
DECLARE
    p       record;
    n       int := coalesce(cardinality(types), 0);
    v_head  bigint;
    v_bad   text;
    v_end   record;
    v_first bigint;
    v_last  bigint;
BEGIN
    IF coalesce(cardinality(payloads), 0) <> n OR coalesce(cardinality(metadatas), 0) <> n THEN
        RAISE EXCEPTION 'ledger.process_record: types, payloads and metadatas must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The figures the quota read model adds up (migration 8).
    SELECT ledger.usage_refusal(u.t, u.p) INTO v_bad FROM unnest(types, payloads) AS u(t, p)
    WHERE u.t = 'egress.connection' AND ledger.usage_refusal(u.t, u.p) IS NOT NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.process_record: egress.connection refused: %', v_bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT x.principal, x.run_id, x.state, x.owner_role, x.stop_requested_at INTO p
    FROM ledger.processes x WHERE x.handle = p_handle FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.process_record: no process %', p_handle USING ERRCODE = 'no_data_found';
    END IF;
    SELECT t INTO v_bad FROM unnest(types) AS t
    WHERE t IS NULL OR t NOT IN ('process.stop_requested', 'egress.connection', 'process.ended', 'process.lost') LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.process_record: executors do not write % events on process streams', coalesce(v_bad, 'NULL')
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF 'process.stop_requested' = ANY(types) AND NOT EXISTS (
        SELECT 1 FROM ledger.queue q JOIN ledger.request_status s ON s.id = q.id
        WHERE q.id = p_stop_request AND q.state = 'running' AND q.claimed_role = session_user
          AND s.principal = p.principal AND s.run_id = p.run_id) THEN
        RAISE EXCEPTION 'ledger.process_record: a stop of process % needs a running request of principal % and run % held by login role "%"',
            p_handle, p.principal, p.run_id, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (p_state IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(types) AS t WHERE t <> 'process.stop_requested'))
       AND p.owner_role IS DISTINCT FROM session_user THEN
        RAISE EXCEPTION 'ledger.process_record: process % is recorded by its owner''s login role "%", not "%"',
            p_handle, coalesce(p.owner_role::text, 'none'), session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_state IS NOT NULL AND p_state NOT IN ('ended', 'lost') THEN
        RAISE EXCEPTION 'ledger.process_record: a process ends ended or lost, not %', p_state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT u.t, u.pl::jsonb AS pl INTO v_end
    FROM unnest(types, payloads) WITH ORDINALITY AS u(t, pl, i)
    WHERE u.t IN ('process.ended', 'process.lost') ORDER BY u.i LIMIT 1;
    IF (v_end.t IS NULL AND num_nonnulls(p_state, p_end_reason, p_exit_code, nullif(p_signal, 0), p_result) > 0)
       OR (v_end.t IS NOT NULL AND (
               (p_state IS NOT NULL AND v_end.t <> 'process.' || p_state)
            OR (p_end_reason IS NOT NULL AND p_end_reason IS DISTINCT FROM v_end.pl ->> 'end_reason')
            OR (p_exit_code IS NOT NULL AND p_exit_code IS DISTINCT FROM (v_end.pl ->> 'exit_code')::int)
            OR (nullif(p_signal, 0) IS NOT NULL AND p_signal IS DISTINCT FROM (v_end.pl ->> 'signal')::int)
            OR (p_result IS NOT NULL AND p_result IS DISTINCT FROM v_end.pl))) THEN
        RAISE EXCEPTION 'ledger.process_record: the end of process % is what its process.ended or process.lost event says; the parameters disagree with the events',
            p_handle
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A stop asked for twice, or of a process that has ended, records nothing.
    IF types = ARRAY['process.stop_requested'] AND (p.state <> 'running' OR p.stop_requested_at IS NOT NULL) THEN
        RETURN p.state;
    END IF;
    IF n > 0 THEN
        SELECT coalesce(max(e.version), 0) INTO v_head FROM ledger.events e WHERE e.stream = 'process:' || p_handle;
        SELECT min(x."position"), max(x."position") INTO v_first, v_last
        FROM ledger.insert_events(array_fill('process:' || p_handle, ARRAY[n]),
                                  ARRAY(SELECT v_head + i FROM generate_series(1, n) AS i), types, payloads, metadatas) x;
        PERFORM ledger.apply_processes(pg_current_xact_id(), v_first - 1, pg_current_xact_id(), v_last);
    END IF;
    RETURN p.state;
END $$;


--
-- Name: process_start(uuid, uuid, text, text, text, text, integer, bigint, timestamp with time zone, timestamp with time zone, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
DECLARE
    r       record;
    pj      jsonb;
    v_first bigint;
    v_last  bigint;
BEGIN
    SELECT s.principal, s.run_id INTO r
    FROM ledger.queue q JOIN ledger.request_status s ON s.id = q.id
    WHERE q.id = p_request_id AND q.state = 'running' AND q.claimed_role = session_user;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.process_start: request % is not running under a claim of login role "%"', p_request_id, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF r.run_id IS NULL THEN
        RAISE EXCEPTION 'ledger.process_start: request % has no run; a background process needs one', p_request_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    pj := p_payload::jsonb;
    IF jsonb_typeof(pj) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'ledger.process_start: process.started''s payload must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (pj ->> 'handle') IS DISTINCT FROM p_handle::text OR (pj ->> 'request_id') IS DISTINCT FROM p_request_id::text
       OR (pj ->> 'principal') IS DISTINCT FROM r.principal OR (pj ->> 'run_id') IS DISTINCT FROM r.run_id THEN
        RAISE EXCEPTION 'ledger.process_start: process.started must name handle %, request %, principal % and run %',
            p_handle, p_request_id, r.principal, r.run_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (pj ->> 'mode') IS DISTINCT FROM p_mode OR (pj ->> 'tier') IS DISTINCT FROM p_tier
       OR (pj ->> 'command') IS DISTINCT FROM p_command OR (pj ->> 'owner') IS DISTINCT FROM p_owner
       OR (pj ->> 'pid')::int IS DISTINCT FROM p_pid OR (pj ->> 'pid_start')::bigint IS DISTINCT FROM p_pid_start
       OR (pj ->> 'started_at')::timestamptz IS DISTINCT FROM p_started_at
       OR (pj ->> 'expires_at')::timestamptz IS DISTINCT FROM p_expires_at THEN
        RAISE EXCEPTION 'ledger.process_start: process.started must say the mode, tier, command, owner, pid, pid_start, started_at and expires_at it is recorded with'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    pj := jsonb_set(pj, '{owner_role}', to_jsonb(session_user::text));
    SELECT min(x."position"), max(x."position") INTO v_first, v_last
    FROM ledger.insert_events(ARRAY['process:' || p_handle], ARRAY[1::bigint], ARRAY['process.started'],
                              ARRAY[pj::text], ARRAY[p_metadata]) x;
    PERFORM ledger.apply_processes(pg_current_xact_id(), v_first - 1, pg_current_xact_id(), v_last);
END $$;


--
-- Name: projection_advance(text, xid8, bigint, xid8, bigint, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: projection_apply(text, ledger.projected_event[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_apply(p_name text, p_events ledger.projected_event[]) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
BEGIN
    CASE p_name
        WHEN 'audit_trail' THEN RETURN ledger.apply_audit_trail(p_events);
        WHEN 'quota_usage' THEN RETURN ledger.apply_quota_usage(p_events);
        WHEN 'skill_status' THEN RETURN ledger.apply_skill_status(p_events);
        ELSE RAISE EXCEPTION 'ledger: projection % does not apply a batch read for it', p_name USING ERRCODE = 'undefined_object';
    END CASE;
END $$;


--
-- Name: projection_apply(text, xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_apply(p_name text, p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
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


--
-- Name: projection_batch_end(xid8, bigint, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_batch_end(p_from_tx xid8, p_from_pos bigint, p_max integer) RETURNS TABLE(tx_id xid8, "position" bigint, n bigint)
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.tx_id, e.position, e.n
    FROM (SELECT e.tx_id, e.position, row_number() OVER (ORDER BY e.tx_id, e.position) AS n FROM ledger.events e
          WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY e.tx_id, e.position LIMIT p_max) e
    ORDER BY e.n DESC LIMIT 1;
END $$;


--
-- Name: projection_event(text, text, json); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_event(p_name text, p_type text, p_payload json) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            p_type, p_payload, json_build_object('actor', session_user, 'login_role', session_user));
$$;


--
-- Name: projection_fail(text, xid8, bigint, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_p     record;
    v_error text := left(coalesce(p_error, 'unknown error'), 4000);
BEGIN
    SELECT * INTO v_p FROM ledger.projections p WHERE p.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_fail: no projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF v_p.state = 'failed' THEN
        RETURN;
    END IF;
    UPDATE ledger.projections
    SET state = 'failed', failed_tx_id = p_tx, failed_position = p_position, failed_type = p_type,
        last_error = 'failed at position ' || p_position || ': ' || v_error, updated_at = clock_timestamp()
    WHERE name = p_name;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            'projection.failed',
            json_build_object('projection', p_name, 'position', p_position, 'tx_id', p_tx::text,
                              'event_type', p_type, 'error', v_error,
                              'checkpoint', json_build_object('tx_id', v_p.tx_id::text, 'position', v_p.position)),
            json_build_object('actor', session_user, 'login_role', session_user));
END $$;


--
-- Name: projection_read(xid8, bigint, xid8, bigint, text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_read(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) RETURNS ledger.projected_event[]
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    RETURN ARRAY(SELECT ROW(e.tx_id, e.position, e.stream, e.version, e.type,
                            CASE WHEN e.type IN ('execution.completed', 'attestation.signed') THEN e.payload - 'envelope'
                                 WHEN e.type = 'tool.requested' THEN e.payload - 'input'
                                 ELSE e.payload END,
                            e.metadata, e.recorded_at)::ledger.projected_event
                 FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos, p_types) e
                 ORDER BY e.tx_id, e.position);
END $$;


--
-- Name: projection_rebuild_abort(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_rebuild_abort(p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
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


--
-- Name: projection_rebuild_begin(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_rebuild_begin(p_name text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
DECLARE
    p record;
    t text;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR cardinality(p.tables) = 0 THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: no SQL projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF p.mode = 'sealer' THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: % is the Merkle log, which signed checkpoints commit to; it is never rebuilt', p_name
            USING ERRCODE = 'feature_not_supported', HINT = 'execledger verify --db checks it from the first leaf';
    END IF;
    PERFORM ledger.refuse_archived_rebuild('ledger.projection_rebuild_begin', p_name);
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


--
-- Name: projection_rebuild_step(text, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_rebuild_step(p_name text, p_max integer) RETURNS TABLE(tx_id text, "position" bigint, applied bigint, head bigint, caught_up boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
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
    SELECT b.tx_id, b.position, b.n INTO v_to FROM ledger.projection_batch_end(p.rebuild_tx_id, p.rebuild_position, p_max) b;
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


--
-- Name: projection_rebuild_swap(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_rebuild_swap(p_name text) RETURNS TABLE(tx_id text, "position" bigint, rows_copied bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
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


--
-- Name: projection_register(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_register(p_name text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_key int;
BEGIN
    INSERT INTO ledger.projections (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
    SELECT p.lock_key INTO STRICT v_key FROM ledger.projections p WHERE p.name = p_name;
    RETURN v_key;
END $$;


--
-- Name: projection_retry(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_retry(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_p record;
BEGIN
    SELECT * INTO v_p FROM ledger.projections p WHERE p.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_retry: no projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF v_p.state <> 'failed' THEN
        RETURN false;
    END IF;
    UPDATE ledger.projections
    SET state = 'active', failed_tx_id = NULL, failed_position = NULL, failed_type = NULL, last_error = NULL,
        updated_at = clock_timestamp()
    WHERE name = p_name;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            'projection.retried',
            json_build_object('projection', p_name, 'position', v_p.failed_position, 'tx_id', v_p.failed_tx_id::text,
                              'previous_error', v_p.last_error, 'note', left(p_note, 1024)),
            json_build_object('actor', session_user, 'login_role', session_user));
    RETURN true;
END $$;


--
-- Name: projection_step(text, xid8, bigint, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer) RETURNS TABLE(tx_id text, "position" bigint, passed bigint, applied bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
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
    SELECT b.tx_id, b.position, b.n INTO v_to FROM ledger.projection_batch_end(p_from_tx, p_from_pos, p_max) b;
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


--
-- Name: projection_step_group(text[], integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_step_group(p_names text[], p_max integer) RETURNS TABLE(name text, tx_id text, "position" bigint, passed bigint, applied bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_members record;
    v_from    record;
    v_to      record;
    v_types   text[];
    v_events  ledger.projected_event[];
    m         record;
    n         bigint;
BEGIN
    IF p_max IS NULL OR p_max < 1 THEN
        RAISE EXCEPTION 'ledger.projection_step_group: p_max must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The checkpoints, locked first (in name order), so two callers never
    -- apply the same events at once.
    SELECT array_agg(p.name ORDER BY p.name) AS names INTO v_members
    FROM (SELECT x.name FROM ledger.projections x
          WHERE x.name = ANY(p_names) AND x.mode = 'async' AND x.state = 'active'
          ORDER BY x.name FOR UPDATE) p;
    IF v_members.names IS NULL THEN
        RETURN;
    END IF;
    SELECT x.tx_id, x.position INTO v_from
    FROM ledger.projections x WHERE x.name = ANY(v_members.names)
    ORDER BY x.tx_id, x.position LIMIT 1;
    SELECT b.tx_id, b.position, b.n INTO v_to FROM ledger.projection_batch_end(v_from.tx_id, v_from.position, p_max) b;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT array_agg(DISTINCT t) INTO v_types FROM unnest(v_members.names) mn, unnest(ledger.projection_types(mn)) t;
    IF 'skill_status' = ANY(v_members.names) THEN
        PERFORM ledger.skill_status_check(v_from.tx_id, v_from.position, v_to.tx_id, v_to.position);
    END IF;
    v_events := ledger.projection_read(v_from.tx_id, v_from.position, v_to.tx_id, v_to.position, coalesce(v_types, '{}'));
    FOR m IN
        SELECT x.name, x.tx_id, x.position FROM ledger.projections x
        WHERE x.name = ANY(v_members.names) AND (x.tx_id, x.position) < (v_to.tx_id, v_to.position)
        ORDER BY x.name
    LOOP
        IF (m.tx_id, m.position) = (v_from.tx_id, v_from.position) THEN
            n := ledger.projection_apply(m.name, v_events);
        ELSE
            n := ledger.projection_apply(m.name, ARRAY(SELECT e FROM unnest(v_events) e
                                                      WHERE (e.tx_id, e.position) > (m.tx_id, m.position)
                                                      ORDER BY e.tx_id, e.position));
        END IF;
        UPDATE ledger.projections x
        SET tx_id = v_to.tx_id, position = v_to.position, updated_at = clock_timestamp(), applied_total = x.applied_total + n
        WHERE x.name = m.name;
        name := m.name; tx_id := v_to.tx_id::text; position := v_to.position; passed := v_to.n; applied := n;
        RETURN NEXT;
    END LOOP;
END $$;


--
-- Name: projection_types(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_types(p_name text) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_name
        WHEN 'audit_trail' THEN ARRAY['request.decided', 'policy.decided', 'approval.granted', 'approval.denied',
                                      'execution.finished', 'execution.completed', 'request.cancelled', 'lease.expired',
                                      'attestation.signed']
        WHEN 'quota_usage' THEN ARRAY['tool.requested', 'request.decided', 'policy.decided', 'approval.denied',
                                      'execution.finished', 'execution.completed', 'egress.connection', 'run.budget_set',
                                      'run.ended', 'budget.consumed']
        WHEN 'skill_status' THEN ARRAY['skill.installed', 'skill.audited', 'skill.quarantined', 'skill.approved',
                                       'skill.enabled', 'skill.disabled', 'skill.rolled_back', 'skill.removed',
                                       'skill.refused']
    END
$$;


--
-- Name: projection_verify(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_verify(p_name text) RETURNS TABLE(table_name text, live_rows bigint, rebuilt_rows bigint, live_digest text, rebuilt_digest text, first_difference text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $_$
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
    PERFORM ledger.refuse_archived_rebuild('ledger.projection_verify', p_name);
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
END $_$;


--
-- Name: events; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events (
    "position" bigint NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
)
PARTITION BY RANGE (tx_id);


--
-- Name: TABLE events; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.events IS 'The immutable event log: the truth every read model is built from. Partitioned by range of tx_id (ledger.event_partitions).';


--
-- Name: COLUMN events.tx_id; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.events.tx_id IS 'Writing transaction; (tx_id, position) is the gapless delivery order, and the partition key.';


--
-- Name: COLUMN events.hash; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.events.hash IS 'ledger.event_hash over the exact stored bytes.';


--
-- Name: read_all(xid8, bigint, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) RETURNS SETOF ledger.events
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.*
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id, e.position) > (after_tx, after_position)
      AND e.tx_id >= after_tx
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
      AND (c.c_tx IS NULL OR (e.tx_id, e.position) > (c.c_tx, c.c_pos)
           OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id))
    ORDER BY e.tx_id, e.position
    LIMIT max_events
$$;


--
-- Name: refuse_archived_rebuild(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.refuse_archived_rebuild(p_caller text, p_projection text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    a record;
BEGIN
    SELECT x.partition_name, x.first_leaf, x.last_leaf, x.bundle_sha256, count(*) OVER () AS n INTO a
    FROM ledger.event_archives x WHERE x.events > 0 ORDER BY x.first_leaf LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '%: projection % is rebuilt from the log''s first event, and % archived partitions of the log are no longer in the database, the first % (leaves % to %, bundle sha256 %)',
            p_caller, p_projection, a.n, a.partition_name, a.first_leaf, a.last_leaf, a.bundle_sha256
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'the live read model keeps being applied from the newer events; to rebuild it, restore the archived partitions in a copy of the database (docs/scaling.md)';
    END IF;
END $$;


--
-- Name: refuse_change(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'ledger.%: % is not allowed, the event log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'append a compensating event instead';
END $$;


--
-- Name: refuse_log_change(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.refuse_log_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'checkpoints' AND OLD.published_at IS NULL
       AND (NEW.size, NEW.root_hash, NEW.origin, NEW.note, NEW.signed_at) = (OLD.size, OLD.root_hash, OLD.origin, OLD.note, OLD.signed_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ledger.%: % is not allowed, the Merkle log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;


--
-- Name: register_waiter(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.register_waiter(executor text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM ledger.queue_waiters w
    WHERE w.registration IN (SELECT x.registration FROM ledger.queue_waiters x
                             WHERE x.executor = register_waiter.executor FOR UPDATE SKIP LOCKED);
    INSERT INTO ledger.queue_waiters (executor) VALUES (register_waiter.executor);
$$;


--
-- Name: retreat_stream_heads(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.retreat_stream_heads() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    UPDATE ledger.stream_heads h SET version = m.v, prior = m.v
    FROM (SELECT o.stream, (SELECT max(e.version) FROM ledger.events e WHERE e.stream = o.stream) AS v
          FROM (SELECT DISTINCT d.stream FROM old_events d) o) m
    WHERE h.stream = m.stream AND m.v < h.version;
    RETURN NULL;
END $$;


--
-- Name: run_budget(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.run_budget(run_id text, principal text DEFAULT NULL::text) RETURNS TABLE(max_calls integer, used integer, ended boolean)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    SELECT r.max_calls, coalesce(r.used, 0), coalesce(r.ended_at IS NOT NULL, false)
    FROM (SELECT coalesce($2, ledger.current_principal()) AS principal) k
    LEFT JOIN ledger.runs r ON r.principal = k.principal AND r.run_id = $1
    WHERE $1 IS NOT NULL AND k.principal IS NOT NULL
      AND (k.principal IS NOT DISTINCT FROM ledger.current_principal()
           OR pg_has_role(session_user, 'ledger_auditor', 'MEMBER')
           OR pg_has_role(session_user, 'ledger_executor', 'MEMBER')
           OR pg_has_role(session_user, 'ledger_admin', 'MEMBER'))
$_$;


--
-- Name: set_run_budget(text, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.set_run_budget(run_id text, max_calls integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $_$
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
END $_$;


--
-- Name: skill_actor(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_actor(p_op text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_append(text, bigint, text, jsonb, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_append(p_stream text, p_version bigint, p_type text, p_payload jsonb, p_actor text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES (p_stream, p_version + 1, p_type, p_payload::json,
            json_build_object('actor', p_actor, 'login_role', session_user))
    RETURNING version;
$$;


--
-- Name: skill_approve(text, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_disable(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_disable(p_skill_id text, p_reason text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
    PERFORM ledger.skill_set(s, 'skill.disabled', jsonb_build_object('reason', coalesce(p_reason, 'disabled by an operator'), 'revoked_key_id', NULL), v_actor);
    RETURN ROW(true, 'disabled', 'disabled ' || p_skill_id)::ledger.skill_result;
END $$;


--
-- Name: skill_enable(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_enable(p_skill_id text, p_note text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_history(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_history(p_skill_id text) RETURNS TABLE(version bigint, type text, payload text, actor text, recorded_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.version, e.type, e.payload::text, e.metadata::jsonb ->> 'actor', e.recorded_at
    FROM ledger.events e WHERE e.stream = 'skill:' || p_skill_id ORDER BY e.version
$$;


--
-- Name: skill_install(text, text, text, text, text, bytea, text, bytea, text[], bigint, text[], bytea[], boolean); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean DEFAULT false) RETURNS ledger.skill_result
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


--
-- Name: skill_key_trusted(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_key_trusted(p_key_id text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT EXISTS (SELECT 1 FROM ledger.skill_trust_keys k WHERE k.key_id = p_key_id AND k.revoked_at IS NULL)
$$;


--
-- Name: skills; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skills (
    skill_id text NOT NULL,
    status text NOT NULL,
    artifact_digest text NOT NULL,
    cleared boolean DEFAULT false NOT NULL,
    approvals text[] DEFAULT '{}'::text[] NOT NULL,
    failed_checks jsonb,
    previous_digest text,
    previous_cleared boolean DEFAULT false NOT NULL,
    stream_version bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT skills_status_check CHECK ((status = ANY (ARRAY['installed'::text, 'verified'::text, 'quarantined'::text, 'approved'::text, 'enabled'::text, 'disabled'::text, 'removed'::text])))
);


--
-- Name: TABLE skills; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skills IS 'Skill lifecycle state (write side), kept by the skill functions with the skill.* events.';


--
-- Name: skill_lock(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_lock(p_op text, p_skill_id text) RETURNS ledger.skills
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_record_audit(text, text, boolean, jsonb, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text DEFAULT 'install'::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_refuse(ledger.skills, text, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_refuse(s ledger.skills, p_action text, p_reason text, p_actor text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_remove(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_remove(p_skill_id text, p_reason text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_rollback(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text DEFAULT NULL::text) RETURNS ledger.skill_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: skill_set(ledger.skills, text, jsonb, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_set(s ledger.skills, p_type text, p_payload jsonb, p_actor text) RETURNS bigint
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


--
-- Name: skill_status_check(xid8, bigint, xid8, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_status_check(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS void
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


--
-- Name: skill_trust_add(text, text, bytea, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text DEFAULT NULL::text) RETURNS void
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


--
-- Name: skill_trust_revoke(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text DEFAULT NULL::text) RETURNS integer
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


--
-- Name: submit(text, jsonb, text, text, jsonb); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.submit(tool text, input jsonb, run_id text DEFAULT NULL::text, idempotency_key text DEFAULT NULL::text, context jsonb DEFAULT '{}'::jsonb) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $_$
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
    v_payload   json;
    v_meta      json;
    v_bad       text;
    v_at        timestamptz;
    v_trace     text;
    v_span      text;
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
        WHERE k NOT IN ('device', 'channel', 'session', 'traceparent', 'tracestate') LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context key "%" is not one of device, channel, session, traceparent, tracestate', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT k INTO v_bad FROM jsonb_each(context) AS c(k, v)
        WHERE jsonb_typeof(c.v) <> 'string'
           OR octet_length(c.v #>> '{}') NOT BETWEEN 1 AND CASE WHEN c.k = 'tracestate' THEN 512 ELSE 256 END LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context.% must be a string of 1 to % bytes', v_bad,
                CASE WHEN v_bad = 'tracestate' THEN 512 ELSE 256 END
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        -- W3C Trace Context: the submitter's span. Version 00 exactly;
        -- a later version's first four fields (the spec's forward rule);
        -- never version ff, an all-zero trace id or an all-zero parent id.
        IF context ? 'traceparent' THEN
            IF context ->> 'traceparent' !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[ -~]*)?$'
               OR left(context ->> 'traceparent', 2) = 'ff'
               OR (left(context ->> 'traceparent', 2) = '00' AND octet_length(context ->> 'traceparent') <> 55)
               OR substr(context ->> 'traceparent', 4, 32) = repeat('0', 32)
               OR substr(context ->> 'traceparent', 37, 16) = repeat('0', 16) THEN
                RAISE EXCEPTION 'ledger.submit: context.traceparent % is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case, ids not all zero)',
                    quote_literal(left(context ->> 'traceparent', 80))
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            v_trace := substr(context ->> 'traceparent', 4, 32);
            v_span := substr(context ->> 'traceparent', 37, 16);
        ELSIF context ? 'tracestate' THEN
            RAISE EXCEPTION 'ledger.submit: context.tracestate needs a context.traceparent'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF context ->> 'tracestate' ~ '[^ -~]' THEN
            RAISE EXCEPTION 'ledger.submit: context.tracestate must be printable ASCII (W3C tracestate)'
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
        'context_bound', to_json(v_bound));
    v_meta := CASE WHEN v_trace IS NULL
        THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', v_id)
        ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', v_id,
                               'trace_id', v_trace, 'span_id', v_span) END;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || v_id, 1, 'tool.requested', v_payload, v_meta)
    RETURNING recorded_at INTO v_at;
    INSERT INTO ledger.request_status (id, principal, tool, run_id, idempotency_key, input_digest, submitted_at)
    VALUES (v_id, v_principal, submit.tool, submit.run_id, submit.idempotency_key, v_digest, v_at);

    INSERT INTO ledger.queue (id, trace_id, trace_span_id) VALUES (v_id, v_trace, v_span);

    PERFORM ledger.wake_waiters();
    RETURN v_id;
END $_$;


--
-- Name: submit(text, text, text, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.submit(tool text, input text, run_id text DEFAULT NULL::text, idempotency_key text DEFAULT NULL::text, context text DEFAULT '{}'::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_input   jsonb;
    v_context jsonb;
BEGIN
    IF input IS NULL THEN
        RAISE EXCEPTION 'ledger.submit: input must be a JSON object, got NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- An odd number of backslashes before u0000 is the escape of NUL.
    IF strpos(input, 'u0000') > 0 AND input ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        RAISE EXCEPTION 'ledger.submit: input contains \u0000 (NUL), which PostgreSQL cannot store in JSON'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'encode binary data (base64, say) before putting it in a JSON string';
    END IF;
    IF context IS NOT NULL AND strpos(context, 'u0000') > 0 AND context ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        RAISE EXCEPTION 'ledger.submit: context contains \u0000 (NUL), which PostgreSQL cannot store in JSON'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    BEGIN
        v_input := input::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character OR character_not_in_repertoire THEN
        RAISE EXCEPTION 'ledger.submit: input is not valid JSON: %', SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    BEGIN
        v_context := context::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character OR character_not_in_repertoire THEN
        RAISE EXCEPTION 'ledger.submit: context is not valid JSON: %', SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    RETURN ledger.submit(tool, v_input, run_id, idempotency_key, v_context);
END $$;


--
-- Name: submit_many(text[], jsonb[], text[], text[], jsonb[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[] DEFAULT NULL::text[], idempotency_keys text[] DEFAULT NULL::text[], contexts jsonb[] DEFAULT NULL::jsonb[]) RETURNS uuid[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$
DECLARE
    v_principal text;
    v_channel   text;
    v_device    text;
    v_bound     text[] := '{}';
    v_bind      jsonb := '{}';
    n           int;
    v_err       record;
    v_bad       bigint;
    v_ids       uuid[];
    v_any_new   boolean;
BEGIN
    SELECT p.principal, p.channel, p.device INTO v_principal, v_channel, v_device
    FROM ledger.principals p WHERE p.login_role = session_user;
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.submit_many: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'an administrator adds it to ledger.principals';
    END IF;

    IF tools IS NULL OR inputs IS NULL THEN
        RAISE EXCEPTION 'ledger.submit_many: % must be an array, got NULL', CASE WHEN tools IS NULL THEN 'tools' ELSE 'inputs' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    n := cardinality(tools);
    IF array_ndims(tools) > 1 OR array_ndims(inputs) > 1 OR array_ndims(run_ids) > 1
       OR array_ndims(idempotency_keys) > 1 OR array_ndims(contexts) > 1 THEN
        RAISE EXCEPTION 'ledger.submit_many: the arrays must be one-dimensional'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(inputs) <> n OR cardinality(run_ids) <> n OR cardinality(idempotency_keys) <> n
       OR cardinality(contexts) <> n THEN
        RAISE EXCEPTION 'ledger.submit_many: tools has % elements, but inputs %, run_ids %, idempotency_keys %, contexts % (each must have as many, or be NULL where allowed)',
            n, cardinality(inputs), coalesce(cardinality(run_ids)::text, 'NULL'),
            coalesce(cardinality(idempotency_keys)::text, 'NULL'), coalesce(cardinality(contexts)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Each key holds an advisory lock (a shared lock-table entry) until
    -- the transaction ends; the limit keeps one call well inside the
    -- table's default size (max_locks_per_transaction 64 × connections).
    IF n > 1000 THEN
        RAISE EXCEPTION 'ledger.submit_many: % requests in one call, the limit is 1000', n
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'split them into several calls';
    END IF;
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    IF v_channel IS NOT NULL THEN
        v_bind := v_bind || jsonb_build_object('channel', v_channel);
        v_bound := v_bound || 'channel'::text;
    END IF;
    IF v_device IS NOT NULL THEN
        v_bind := v_bind || jsonb_build_object('device', v_device);
        v_bound := v_bound || 'device'::text;
    END IF;

    -- Each element's first failing check, in submit's order and words.
    SELECT c.i, c.e[1] AS code, c.e[2] AS message INTO v_err
    FROM (
        SELECT u.i, CASE
            WHEN u.tool IS NULL OR u.tool !~ '^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$' OR octet_length(u.tool) > 128 THEN
                ARRAY['invalid_parameter_value', format('tool must be a dotted identifier of at most 128 bytes, got %s',
                      coalesce(quote_literal(left(u.tool, 200)), 'NULL'))]
            WHEN u.input IS NULL THEN
                ARRAY['null_value_not_allowed', 'input must be a JSON object, got NULL']
            WHEN jsonb_typeof(u.input) <> 'object' THEN
                ARRAY['invalid_parameter_value', format('input must be a JSON object, got %s', jsonb_typeof(u.input))]
            WHEN octet_length(u.input::text) > 1048576 THEN
                ARRAY['program_limit_exceeded', format('input is %s bytes, the limit is 1048576', octet_length(u.input::text))]
            WHEN u.run_id IS NOT NULL AND u.run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
                ARRAY['invalid_parameter_value', 'run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit']
            WHEN u.key IS NOT NULL AND (u.key = '' OR octet_length(u.key) > 255 OR u.key ~ '[[:cntrl:]]') THEN
                ARRAY['invalid_parameter_value', 'idempotency_key must be 1 to 255 bytes without control characters']
            WHEN u.context IS NULL OR jsonb_typeof(u.context) <> 'object' THEN
                ARRAY['invalid_parameter_value', format('context must be a JSON object, got %s', coalesce(jsonb_typeof(u.context), 'NULL'))]
            WHEN u.context = '{}' THEN NULL
            WHEN k.key IS NOT NULL THEN
                ARRAY['invalid_parameter_value', format('context key "%s" is not one of device, channel, session, traceparent, tracestate', k.key)]
            WHEN v.key IS NOT NULL THEN
                ARRAY['invalid_parameter_value', format('context.%s must be a string of 1 to %s bytes', v.key,
                      CASE WHEN v.key = 'tracestate' THEN 512 ELSE 256 END)]
            WHEN u.context ? 'traceparent'
                 AND (u.context ->> 'traceparent' !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[ -~]*)?$'
                      OR left(u.context ->> 'traceparent', 2) = 'ff'
                      OR (left(u.context ->> 'traceparent', 2) = '00' AND octet_length(u.context ->> 'traceparent') <> 55)
                      OR substr(u.context ->> 'traceparent', 4, 32) = repeat('0', 32)
                      OR substr(u.context ->> 'traceparent', 37, 16) = repeat('0', 16)) THEN
                ARRAY['invalid_parameter_value', format('context.traceparent %s is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case, ids not all zero)',
                      quote_literal(left(u.context ->> 'traceparent', 80)))]
            WHEN NOT u.context ? 'traceparent' AND u.context ? 'tracestate' THEN
                ARRAY['invalid_parameter_value', 'context.tracestate needs a context.traceparent']
            WHEN u.context ->> 'tracestate' ~ '[^ -~]' THEN
                ARRAY['invalid_parameter_value', 'context.tracestate must be printable ASCII (W3C tracestate)']
            WHEN v_channel IS NOT NULL AND u.context ? 'channel' AND u.context ->> 'channel' <> v_channel THEN
                ARRAY['insufficient_privilege', format('context.channel is bound to %s for login role "%s"; %s is not it',
                      quote_literal(v_channel), session_user, quote_literal(u.context ->> 'channel'))]
            WHEN v_device IS NOT NULL AND u.context ? 'device' AND u.context ->> 'device' <> v_device THEN
                ARRAY['insufficient_privilege', format('context.device is bound to %s for login role "%s"; %s is not it',
                      quote_literal(v_device), session_user, quote_literal(u.context ->> 'device'))]
            END AS e
        FROM (SELECT u.tool, u.input, u.run_id, u.key, CASE WHEN contexts IS NULL THEN '{}' ELSE u.context END AS context, u.i
              FROM unnest(tools, inputs, run_ids, idempotency_keys, contexts) WITH ORDINALITY AS u(tool, input, run_id, key, context, i)) u
        LEFT JOIN LATERAL (
            SELECT x AS key FROM jsonb_object_keys(CASE WHEN jsonb_typeof(u.context) = 'object' THEN u.context END) AS x
            WHERE x NOT IN ('device', 'channel', 'session', 'traceparent', 'tracestate') LIMIT 1) k ON true
        LEFT JOIN LATERAL (
            SELECT c.k AS key FROM jsonb_each(CASE WHEN jsonb_typeof(u.context) = 'object' THEN u.context END) AS c(k, v)
            WHERE jsonb_typeof(c.v) <> 'string'
               OR octet_length(c.v #>> '{}') NOT BETWEEN 1 AND CASE WHEN c.k = 'tracestate' THEN 512 ELSE 256 END LIMIT 1) v ON true
    ) c
    WHERE c.e IS NOT NULL
    ORDER BY c.i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = v_err.code, MESSAGE = format('ledger.submit_many: element %s: %s', v_err.i, v_err.message);
    END IF;

    -- submit's per-key advisory locks, in one order for every caller.
    IF idempotency_keys IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(s.k)
        FROM (SELECT DISTINCT hashtextextended('idempotency:' || v_principal || '/' || x, 0) AS k
              FROM unnest(idempotency_keys) AS x WHERE x IS NOT NULL ORDER BY 1) s;
    END IF;

    -- One statement from here: each element's id (a new one, the existing
    -- request's of its key, or the id of the call's first element with
    -- its key; a key's first request must have the same tool, input and
    -- run_id), then, unless an element conflicts, the rows, built once:
    -- the events, the read-model rows from the same values and each
    -- event's recorded_at, the queue rows.
    WITH u AS MATERIALIZED (
        SELECT u.i, u.tool, u.input, u.run_id, u.key, u.context,
               sha256(convert_to(u.input::text, 'UTF8')) AS digest, ledger.uuid_v7() AS nid
        FROM unnest(tools, inputs, run_ids, idempotency_keys, contexts) WITH ORDINALITY AS u(tool, input, run_id, key, context, i)
    ), ex AS (
        SELECT r.idempotency_key AS key, r.id, r.tool, r.input_digest AS digest, r.run_id
        FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = ANY (idempotency_keys)
    ), f AS (
        SELECT DISTINCT ON (u.key) u.key, u.i, u.nid, u.tool, u.digest, u.run_id FROM u WHERE u.key IS NOT NULL ORDER BY u.key, u.i
    ), firsts AS (
        SELECT f.key, ex.id IS NOT NULL AS existed, f.i AS first_i, coalesce(ex.id, f.nid) AS id,
               CASE WHEN ex.id IS NOT NULL THEN ex.tool ELSE f.tool END AS tool,
               CASE WHEN ex.id IS NOT NULL THEN ex.digest ELSE f.digest END AS digest,
               CASE WHEN ex.id IS NOT NULL THEN ex.run_id ELSE f.run_id END AS run_id
        FROM f LEFT JOIN ex ON ex.key = f.key
    ), res AS MATERIALIZED (
        SELECT u.i, coalesce(fi.id, u.nid) AS id,
               fi.key IS NULL OR (NOT fi.existed AND fi.first_i = u.i) AS new,
               fi.key IS NOT NULL AND (fi.tool <> u.tool OR fi.digest <> u.digest OR fi.run_id IS DISTINCT FROM u.run_id) AS conflict
        FROM u LEFT JOIN firsts fi ON fi.key = u.key
    ), bad AS MATERIALIZED (
        SELECT min(res.i) AS i FROM res WHERE res.conflict
    ), x AS MATERIALIZED (
        SELECT u.i, res.id, u.tool, u.run_id, u.key, u.input, u.digest,
               CASE WHEN v_bind = '{}' OR u.context IS NULL THEN coalesce(u.context, '{}') ELSE u.context || v_bind END AS context,
               CASE WHEN u.context ? 'traceparent' THEN substr(u.context ->> 'traceparent', 4, 32) END AS trace,
               CASE WHEN u.context ? 'traceparent' THEN substr(u.context ->> 'traceparent', 37, 16) END AS span
        FROM u JOIN res ON res.i = u.i
        WHERE res.new AND (SELECT bad.i FROM bad) IS NULL
    ), ev AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'request:' || x.id, 1, 'tool.requested',
               json_build_object(
                   'request_id', x.id,
                   'principal', v_principal,
                   'tool', x.tool,
                   'run_id', x.run_id,
                   'idempotency_key', x.key,
                   'input', x.input,
                   'input_digest', 'sha256:' || encode(x.digest, 'hex'),
                   'context', x.context,
                   'context_bound', to_json(v_bound)),
               CASE WHEN x.trace IS NULL
                   THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', x.id)
                   ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', x.id,
                                          'trace_id', x.trace, 'span_id', x.span) END
        FROM x ORDER BY x.i
        RETURNING stream, recorded_at
    ), rs AS (
        INSERT INTO ledger.request_status (id, principal, tool, run_id, idempotency_key, input_digest, submitted_at)
        SELECT x.id, v_principal, x.tool, x.run_id, x.key, x.digest, ev.recorded_at
        FROM x JOIN ev ON ev.stream = 'request:' || x.id
        ORDER BY x.i
    ), q AS (
        INSERT INTO ledger.queue (id, trace_id, trace_span_id)
        SELECT x.id, x.trace, x.span FROM x ORDER BY x.i
    )
    SELECT array_agg(res.id ORDER BY res.i), bool_or(res.new), (SELECT bad.i FROM bad)
    INTO v_ids, v_any_new, v_bad
    FROM res;

    IF v_bad IS NOT NULL THEN
        SELECT r.id, r.idempotency_key AS key INTO v_err FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = idempotency_keys[array_lower(idempotency_keys, 1) + v_bad - 1];
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit_many: element %: idempotency key % already names request %, which has another tool, input or run_id',
                v_bad, quote_literal(v_err.key), v_err.id
                USING ERRCODE = 'unique_violation',
                      HINT = 'a retry must repeat the same tool, input and run_id';
        END IF;
        RAISE EXCEPTION 'ledger.submit_many: element %: idempotency key % already names element % of this call, which has another tool, input or run_id',
            v_bad, quote_literal(idempotency_keys[array_lower(idempotency_keys, 1) + v_bad - 1]),
            array_position(idempotency_keys, idempotency_keys[array_lower(idempotency_keys, 1) + v_bad - 1]) - array_lower(idempotency_keys, 1) + 1
            USING ERRCODE = 'unique_violation',
                  HINT = 'a retry must repeat the same tool, input and run_id';
    END IF;
    IF NOT v_any_new THEN
        RETURN v_ids;
    END IF;

    PERFORM ledger.wake_waiters();
    RETURN v_ids;
END $_$;


--
-- Name: unregister_waiter(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.unregister_waiter(executor text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM ledger.queue_waiters w
    WHERE w.registration IN (SELECT x.registration FROM ledger.queue_waiters x
                             WHERE x.executor = unregister_waiter.executor FOR UPDATE SKIP LOCKED);
$$;


--
-- Name: unsealed_events(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.unsealed_events(p_limit integer DEFAULT 1000) RETURNS TABLE(tx_id xid8, "position" bigint, stream text, version bigint, type text, recorded_at timestamp with time zone, reason text)
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.recorded_at,
           CASE WHEN e.tx_id >= pg_snapshot_xmax(pg_current_snapshot()) THEN 'future_transaction' ELSE 'behind_sealer' END
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id >= pg_snapshot_xmax(pg_current_snapshot())
           OR ((e.tx_id, e.position) <= (c.c_tx, c.c_pos)
               AND NOT EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id)))
    ORDER BY e.tx_id, e.position
    LIMIT greatest(p_limit, 1)
$$;


--
-- Name: FUNCTION unsealed_events(p_limit integer); Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON FUNCTION ledger.unsealed_events(p_limit integer) IS 'Events the Merkle log has passed without sealing, or that claim a future transaction id: forgeries (fault unsealed_event).';


--
-- Name: usage_refusal(text, jsonb); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.usage_refusal(p_type text, j jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    bad text;
BEGIN
    IF p_type IS DISTINCT FROM 'execution.finished' AND p_type IS DISTINCT FROM 'execution.completed'
       AND p_type IS DISTINCT FROM 'egress.connection' THEN
        RETURN NULL;
    END IF;
    IF p_type IN ('execution.finished', 'execution.completed') THEN
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


--
-- Name: usage_refusal(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.usage_refusal(p_type text, p_payload text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_type IS DISTINCT FROM 'execution.finished' AND p_type IS DISTINCT FROM 'execution.completed'
       AND p_type IS DISTINCT FROM 'egress.connection' THEN
        RETURN NULL;
    END IF;
    RETURN ledger.usage_refusal(p_type, p_payload::jsonb);
END $$;


--
-- Name: uuid_v7(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.uuid_v7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
    SELECT pg_catalog.encode(
        pg_catalog.set_bit(pg_catalog.set_bit(
            pg_catalog.overlay(pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                pg_catalog.substring(pg_catalog.int8send(pg_catalog.int8(
                    pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)), 3),
                1, 6),
            52, 1), 53, 1), 'hex')::pg_catalog.uuid
$$;


--
-- Name: wake_waiters(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.wake_waiters() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'on'
    AS $$
BEGIN
    PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    WITH taken AS (SELECT x.registration FROM ledger.queue_waiters x FOR UPDATE SKIP LOCKED)
    DELETE FROM ledger.queue_waiters w USING taken t WHERE w.registration = t.registration;
    IF FOUND THEN
        PERFORM pg_notify('ledger_request_pending', '');
    END IF;
END $$;


--
-- Name: audit_trail; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.audit_trail (
    "position" bigint NOT NULL,
    tx_id xid8 NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    kind text NOT NULL,
    event_type text NOT NULL,
    request_id uuid NOT NULL,
    principal text NOT NULL,
    tool text NOT NULL,
    run_id text,
    attempt integer,
    decision text,
    stage text,
    reason_code text,
    determining_policies text[],
    policy_digest text,
    approver text,
    state text,
    tier text,
    error_kind text,
    resources jsonb,
    output_bytes bigint,
    attestation_digest text,
    attestation_position bigint,
    request_position bigint NOT NULL,
    CONSTRAINT audit_trail_kind_check CHECK ((kind = ANY (ARRAY['decision'::text, 'outcome'::text])))
);


--
-- Name: TABLE audit_trail; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.audit_trail IS 'One row per authorization decision and per outcome; projection audit_trail.';


--
-- Name: checkpoint_cosignatures; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.checkpoint_cosignatures (
    size bigint NOT NULL,
    key_name text NOT NULL,
    key_hash bigint NOT NULL,
    signature text NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    recorded_by text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT checkpoint_cosignatures_check CHECK (((key_name ~ '^[^[:space:]+]+$'::text) AND (octet_length(key_name) <= 256) AND ((key_hash >= 0) AND (key_hash <= '4294967295'::bigint)) AND (signature ~ '^[A-Za-z0-9+/]+=*$'::text) AND (octet_length(signature) <= 8192)))
);


--
-- Name: TABLE checkpoint_cosignatures; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.checkpoint_cosignatures IS 'Merkle log: witness cosignatures of checkpoints.';


--
-- Name: checkpoints; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.checkpoints (
    size bigint NOT NULL,
    root_hash bytea NOT NULL,
    origin text NOT NULL,
    note text NOT NULL,
    signed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    published_at timestamp with time zone,
    CONSTRAINT checkpoints_check CHECK (((size > 0) AND (octet_length(root_hash) = 32) AND (octet_length(note) <= 65536)))
);


--
-- Name: TABLE checkpoints; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.checkpoints IS 'Merkle log: signed checkpoints (C2SP tlog-checkpoint notes), recorded also as checkpoint.signed on stream log.';


--
-- Name: event_archives_id_seq; Type: SEQUENCE; Schema: ledger; Owner: -
--

ALTER TABLE ledger.event_archives ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME ledger.event_archives_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: event_partitioning; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.event_partitioning (
    one boolean DEFAULT true NOT NULL,
    width bigint DEFAULT 100000000 NOT NULL,
    ahead integer DEFAULT 2 NOT NULL,
    CONSTRAINT event_partitioning_ahead_check CHECK (((ahead >= 1) AND (ahead <= 100))),
    CONSTRAINT event_partitioning_one_check CHECK (one),
    CONSTRAINT event_partitioning_width_check CHECK ((width >= 1))
);


--
-- Name: TABLE event_partitioning; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.event_partitioning IS 'The width (in transaction ids) of a range partition of ledger.events, and how many are created ahead.';


--
-- Name: events_0; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events_0 (
    "position" bigint DEFAULT NULL NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
);


--
-- Name: TABLE events_0; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.events_0 IS 'The immutable event log: the truth every read model is built from.';


--
-- Name: COLUMN events_0.tx_id; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.events_0.tx_id IS 'Writing transaction; (tx_id, position) is the gapless delivery order.';


--
-- Name: COLUMN events_0.hash; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.events_0.hash IS 'ledger.event_hash over the exact stored bytes.';


--
-- Name: events_position_seq; Type: SEQUENCE; Schema: ledger; Owner: -
--

CREATE SEQUENCE ledger.events_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: events_position_seq; Type: SEQUENCE OWNED BY; Schema: ledger; Owner: -
--

ALTER SEQUENCE ledger.events_position_seq OWNED BY ledger.events."position";


--
-- Name: events_XID; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events_XID (
    "position" bigint DEFAULT nextval('ledger.events_position_seq'::regclass) NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
);


--
-- Name: events_XID; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events_XID (
    "position" bigint DEFAULT nextval('ledger.events_position_seq'::regclass) NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
);


--
-- Name: events_XID; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events_XID (
    "position" bigint DEFAULT nextval('ledger.events_position_seq'::regclass) NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
);


--
-- Name: events_default; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events_default (
    "position" bigint DEFAULT nextval('ledger.events_position_seq'::regclass) NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
);


--
-- Name: log_faults; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.log_faults (
    tx_id xid8 NOT NULL,
    "position" bigint NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    reason text NOT NULL,
    found_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT log_faults_reason_check CHECK ((reason = ANY (ARRAY['behind_sealer'::text, 'future_transaction'::text])))
);


--
-- Name: TABLE log_faults; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.log_faults IS 'Merkle log: events found in ledger.events below the sealed horizon but outside the tree (each also a log.unsealed_event).';


--
-- Name: log_leaves; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.log_leaves (
    leaf_index bigint NOT NULL,
    tx_id xid8 NOT NULL,
    "position" bigint NOT NULL,
    CONSTRAINT log_leaves_index_check CHECK ((leaf_index >= 0))
);


--
-- Name: TABLE log_leaves; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.log_leaves IS 'Merkle log: leaf index -> the event (tx_id, position), in ledger.read_all order, dense from 0.';


--
-- Name: log_nodes; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.log_nodes (
    level smallint NOT NULL,
    idx bigint NOT NULL,
    hash bytea NOT NULL,
    CONSTRAINT log_nodes_check CHECK ((((level >= 0) AND (level <= 63)) AND (idx >= 0) AND (octet_length(hash) = 32)))
);


--
-- Name: TABLE log_nodes; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.log_nodes IS 'Merkle log: RFC 6962 hashes of the perfect subtrees (level 0: leaf hashes).';


--
-- Name: mcp_tokens; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.mcp_tokens (
    token_id text NOT NULL,
    token_sha256 bytea NOT NULL,
    login_role name NOT NULL,
    note text,
    created_by name DEFAULT SESSION_USER NOT NULL,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    revoked_at timestamp with time zone,
    revoked_by name,
    CONSTRAINT mcp_tokens_id_check CHECK ((token_id ~ '^[0-9a-f]{12}$'::text)),
    CONSTRAINT mcp_tokens_note_check CHECK (((note IS NULL) OR (octet_length(note) <= 1024))),
    CONSTRAINT mcp_tokens_revoked_check CHECK (((revoked_at IS NULL) = (revoked_by IS NULL))),
    CONSTRAINT mcp_tokens_sha256_check CHECK ((octet_length(token_sha256) = 32))
);


--
-- Name: TABLE mcp_tokens; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.mcp_tokens IS 'Bearer tokens of execledger mcp (SHA-256 only) and the login role each acts as.';


--
-- Name: notify_secret; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.notify_secret (
    id boolean DEFAULT true NOT NULL,
    secret bytea NOT NULL,
    CONSTRAINT notify_secret_length CHECK ((octet_length(secret) >= 32)),
    CONSTRAINT notify_secret_one_row CHECK (id)
);


--
-- Name: TABLE notify_secret; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.notify_secret IS 'Secret from which each principal''s completion channel name is derived.';


--
-- Name: principals; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.principals (
    login_role name NOT NULL,
    principal text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    channel text,
    device text,
    CONSTRAINT principals_channel_check CHECK (((channel IS NULL) OR ((octet_length(channel) >= 1) AND (octet_length(channel) <= 256)))),
    CONSTRAINT principals_device_check CHECK (((device IS NULL) OR ((octet_length(device) >= 1) AND (octet_length(device) <= 256)))),
    CONSTRAINT principals_principal_check CHECK ((principal ~ '^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$'::text))
);


--
-- Name: TABLE principals; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.principals IS 'Maps a login role (session_user) to the principal its calls act as.';


--
-- Name: COLUMN principals.channel; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.principals.channel IS 'When set, the context.channel of every request of this login role (bound, not claimed).';


--
-- Name: COLUMN principals.device; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.principals.device IS 'When set, the context.device of every request of this login role (bound, not claimed).';


--
-- Name: processes; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.processes (
    handle uuid NOT NULL,
    principal text NOT NULL,
    run_id text NOT NULL,
    request_id uuid NOT NULL,
    mode text NOT NULL,
    tier text NOT NULL,
    command text NOT NULL,
    owner text NOT NULL,
    pid integer NOT NULL,
    pid_start bigint NOT NULL,
    state text DEFAULT 'running'::text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    stop_requested_at timestamp with time zone,
    ended_at timestamp with time zone,
    end_reason text,
    exit_code integer,
    signal integer,
    result jsonb,
    owner_role name,
    CONSTRAINT processes_ended_check CHECK (((state = 'running'::text) = (ended_at IS NULL))),
    CONSTRAINT processes_mode_check CHECK ((mode = ANY (ARRAY['run_owned'::text, 'detached'::text]))),
    CONSTRAINT processes_state_check CHECK ((state = ANY (ARRAY['running'::text, 'ended'::text, 'lost'::text])))
);


--
-- Name: TABLE processes; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.processes IS 'Background processes of process.run; derived from the process:<handle> streams.';


--
-- Name: COLUMN processes.owner_role; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.processes.owner_role IS 'Login role of the executor whose call started it; the only one that records its events.';


--
-- Name: projections; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.projections (
    name text NOT NULL,
    lock_key integer NOT NULL,
    tx_id xid8 DEFAULT '0'::xid8 NOT NULL,
    "position" bigint DEFAULT 0 NOT NULL,
    state text DEFAULT 'active'::text NOT NULL,
    applied_total bigint DEFAULT 0 NOT NULL,
    failed_tx_id xid8,
    failed_position bigint,
    failed_type text,
    last_error text,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    mode text DEFAULT 'async'::text NOT NULL,
    tables text[] DEFAULT '{}'::text[] NOT NULL,
    rebuild_tx_id xid8,
    rebuild_position bigint,
    rebuild_applied bigint,
    rebuild_started_at timestamp with time zone,
    CONSTRAINT projections_failure_check CHECK ((((state = 'active'::text) AND (failed_tx_id IS NULL) AND (failed_position IS NULL) AND (failed_type IS NULL) AND (last_error IS NULL)) OR ((state = 'failed'::text) AND (failed_tx_id IS NOT NULL) AND (failed_position IS NOT NULL) AND (last_error IS NOT NULL)))),
    CONSTRAINT projections_mode_check CHECK ((mode = ANY (ARRAY['inline'::text, 'async'::text, 'sealer'::text]))),
    CONSTRAINT projections_name_check CHECK (((name ~ '^[a-z][a-z0-9_]*$'::text) AND (octet_length(name) <= 63))),
    CONSTRAINT projections_rebuild_check CHECK (((rebuild_tx_id IS NULL) = (rebuild_position IS NULL))),
    CONSTRAINT projections_state_check CHECK ((state = ANY (ARRAY['active'::text, 'failed'::text])))
);


--
-- Name: TABLE projections; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.projections IS 'One row per projection: its checkpoint in ledger.read_all order and its state.';


--
-- Name: COLUMN projections.lock_key; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.lock_key IS 'Second key of the runner''s session advisory lock.';


--
-- Name: COLUMN projections.tx_id; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.tx_id IS 'Checkpoint: tx_id of the last event passed (0 before the first).';


--
-- Name: COLUMN projections."position"; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections."position" IS 'Checkpoint: position of the last event passed (0 before the first).';


--
-- Name: COLUMN projections.applied_total; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.applied_total IS 'Events handed to the projection''s apply functions and committed.';


--
-- Name: COLUMN projections.mode; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.mode IS 'inline: applied by the writers in their transactions; async: by the engine; sealer: the Merkle log.';


--
-- Name: COLUMN projections.tables; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.tables IS 'Tables in schema ledger the projection owns.';


--
-- Name: COLUMN projections.rebuild_tx_id; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.rebuild_tx_id IS 'A rebuild in progress: its cursor (with rebuild_position); shadow tables in schema ledger_rebuild.';


--
-- Name: projections_lock_key_seq; Type: SEQUENCE; Schema: ledger; Owner: -
--

ALTER TABLE ledger.projections ALTER COLUMN lock_key ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME ledger.projections_lock_key_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: queue; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.queue (
    id uuid NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    available_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    claimed_by text,
    lease_expires_at timestamp with time zone,
    cancel_requested boolean DEFAULT false NOT NULL,
    claim_id uuid,
    stream_version bigint DEFAULT 1 NOT NULL,
    started_at timestamp with time zone,
    approved_digest bytea,
    approval_expires_at timestamp with time zone,
    charged boolean DEFAULT false NOT NULL,
    claimed_role name,
    trace_id text,
    trace_span_id text,
    CONSTRAINT queue_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'awaiting_approval'::text, 'running'::text])))
)
WITH (fillfactor='70', autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='500', autovacuum_vacuum_insert_scale_factor='0', autovacuum_vacuum_insert_threshold='1000', autovacuum_analyze_scale_factor='0', autovacuum_analyze_threshold='1000', autovacuum_vacuum_cost_delay='0');


--
-- Name: TABLE queue; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.queue IS 'Requests that are not final; the claim index matches the claim order.';


--
-- Name: queue_waiters; Type: TABLE; Schema: ledger; Owner: -
--

CREATE UNLOGGED TABLE ledger.queue_waiters (
    executor text NOT NULL,
    since timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    registration bigint NOT NULL
);


--
-- Name: TABLE queue_waiters; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.queue_waiters IS 'Idle executors asking submit to NOTIFY ledger_request_pending: one row per registration, which the submit that wakes them deletes.';


--
-- Name: queue_waiters_registration_seq; Type: SEQUENCE; Schema: ledger; Owner: -
--

ALTER TABLE ledger.queue_waiters ALTER COLUMN registration ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME ledger.queue_waiters_registration_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: quota_denial_buckets; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.quota_denial_buckets (
    principal text NOT NULL,
    bucket text NOT NULL,
    bucket_start timestamp with time zone NOT NULL,
    reason text NOT NULL,
    denied bigint DEFAULT 0 NOT NULL,
    CONSTRAINT quota_denial_buckets_bucket_check CHECK ((bucket = ANY (ARRAY['hour'::text, 'day'::text])))
);


--
-- Name: TABLE quota_denial_buckets; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.quota_denial_buckets IS 'Denied calls per principal and reason in hour and day buckets (UTC); projection quota_usage.';


--
-- Name: quota_denials; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.quota_denials (
    principal text NOT NULL,
    run_id text NOT NULL,
    reason text NOT NULL,
    denied bigint DEFAULT 0 NOT NULL
);


--
-- Name: TABLE quota_denials; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.quota_denials IS 'Denied calls per principal, run and reason; projection quota_usage.';


--
-- Name: quota_usage; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.quota_usage (
    principal text NOT NULL,
    calls_requested bigint DEFAULT 0 NOT NULL,
    calls_allowed bigint DEFAULT 0 NOT NULL,
    calls_denied bigint DEFAULT 0 NOT NULL,
    budget_exhausted bigint DEFAULT 0 NOT NULL,
    calls_finished bigint DEFAULT 0 NOT NULL,
    calls_failed bigint DEFAULT 0 NOT NULL,
    fuel bigint DEFAULT 0 NOT NULL,
    cpu_ms bigint DEFAULT 0 NOT NULL,
    wall_ms bigint DEFAULT 0 NOT NULL,
    output_bytes bigint DEFAULT 0 NOT NULL,
    egress_connections bigint DEFAULT 0 NOT NULL,
    egress_refused bigint DEFAULT 0 NOT NULL,
    egress_bytes bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: TABLE quota_usage; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.quota_usage IS 'Calls and resource use per principal; projection quota_usage.';


--
-- Name: quota_usage_buckets; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.quota_usage_buckets (
    principal text NOT NULL,
    bucket text NOT NULL,
    bucket_start timestamp with time zone NOT NULL,
    calls_allowed bigint DEFAULT 0 NOT NULL,
    calls_denied bigint DEFAULT 0 NOT NULL,
    fuel bigint DEFAULT 0 NOT NULL,
    cpu_ms bigint DEFAULT 0 NOT NULL,
    wall_ms bigint DEFAULT 0 NOT NULL,
    output_bytes bigint DEFAULT 0 NOT NULL,
    egress_connections bigint DEFAULT 0 NOT NULL,
    egress_bytes bigint DEFAULT 0 NOT NULL,
    CONSTRAINT quota_usage_buckets_bucket_check CHECK ((bucket = ANY (ARRAY['minute'::text, 'hour'::text, 'day'::text])))
);


--
-- Name: TABLE quota_usage_buckets; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.quota_usage_buckets IS 'Use per principal in minute, hour and day buckets (UTC); projection quota_usage.';


--
-- Name: quota_usage_runs; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.quota_usage_runs (
    principal text NOT NULL,
    run_id text NOT NULL,
    budget_limit integer,
    budget_used integer DEFAULT 0 NOT NULL,
    budget_remaining integer GENERATED ALWAYS AS (GREATEST((budget_limit - budget_used), 0)) STORED,
    ended_at timestamp with time zone,
    calls_requested bigint DEFAULT 0 NOT NULL,
    calls_allowed bigint DEFAULT 0 NOT NULL,
    calls_denied bigint DEFAULT 0 NOT NULL,
    budget_exhausted bigint DEFAULT 0 NOT NULL,
    calls_finished bigint DEFAULT 0 NOT NULL,
    calls_failed bigint DEFAULT 0 NOT NULL,
    fuel bigint DEFAULT 0 NOT NULL,
    cpu_ms bigint DEFAULT 0 NOT NULL,
    wall_ms bigint DEFAULT 0 NOT NULL,
    output_bytes bigint DEFAULT 0 NOT NULL,
    egress_connections bigint DEFAULT 0 NOT NULL,
    egress_refused bigint DEFAULT 0 NOT NULL,
    egress_bytes bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: TABLE quota_usage_runs; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.quota_usage_runs IS 'Budget and use per (principal, run); projection quota_usage.';


--
-- Name: request_status; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.request_status (
    id uuid NOT NULL,
    principal text NOT NULL,
    tool text NOT NULL,
    run_id text,
    idempotency_key text,
    input_digest bytea NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    error_kind text,
    error text,
    output jsonb,
    tier text,
    attestation_digest text,
    submitted_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT request_status_error_kind_check CHECK (((error_kind IS NULL) OR (error_kind = ANY (ARRAY['invalid_input'::text, 'policy_denied'::text, 'budget_exhausted'::text, 'approval_denied'::text, 'skill_not_active'::text, 'capability_denied'::text, 'workspace_scope_denied'::text, 'egress_denied'::text, 'quota_exceeded'::text, 'timed_out'::text, 'spawn_failed'::text, 'runtime_failure'::text, 'cancelled'::text, 'outcome_unknown'::text])))),
    CONSTRAINT request_status_final_check CHECK (((state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'denied'::text, 'cancelled'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT request_status_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'awaiting_approval'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'denied'::text, 'cancelled'::text])))
)
WITH (fillfactor='80');


--
-- Name: TABLE request_status; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.request_status IS 'Read model behind ledger.requests; derived from the request:<id> streams.';


--
-- Name: requests; Type: VIEW; Schema: ledger; Owner: -
--

CREATE VIEW ledger.requests WITH (security_invoker='true') AS
 SELECT r.id,
    r.principal,
    r.tool,
    r.run_id,
    r.state,
    r.error_kind,
    r.error,
    r.output,
    r.tier,
    r.attestation_digest,
    r.submitted_at,
    r.finished_at
   FROM ledger.request_status r;


--
-- Name: VIEW requests; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON VIEW ledger.requests IS 'One row per request; a submitter sees only its own principal''s rows.';


--
-- Name: runs; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.runs (
    principal text NOT NULL,
    run_id text NOT NULL,
    max_calls integer,
    used integer DEFAULT 0 NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    ended_at timestamp with time zone,
    CONSTRAINT runs_max_calls_check CHECK (((max_calls IS NULL) OR ((max_calls >= 0) AND (max_calls <= 1000000)))),
    CONSTRAINT runs_used_check CHECK ((used >= 0))
)
WITH (fillfactor='80');


--
-- Name: TABLE runs; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.runs IS 'Per-run call budgets; derived from run.* and budget.consumed events.';


--
-- Name: skill_artifacts; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_artifacts (
    digest text NOT NULL,
    skill_id text NOT NULL,
    version text NOT NULL,
    publisher text NOT NULL,
    key_id text NOT NULL,
    public_key bytea NOT NULL,
    payload_digest text NOT NULL,
    signature bytea NOT NULL,
    tools text[] NOT NULL,
    size bigint NOT NULL,
    installed_by text NOT NULL,
    installed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT skill_artifacts_check CHECK (((digest ~ '^sha256:[0-9a-f]{64}$'::text) AND (payload_digest ~ '^sha256:[0-9a-f]{64}$'::text) AND (octet_length(public_key) = 32) AND (octet_length(signature) = 64) AND ((cardinality(tools) >= 1) AND (cardinality(tools) <= 64)) AND (size > 0)))
);


--
-- Name: TABLE skill_artifacts; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_artifacts IS 'Installed skill artifacts by archive digest; append-only.';


--
-- Name: skill_files; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_files (
    artifact_digest text NOT NULL,
    path text NOT NULL,
    content bytea NOT NULL,
    CONSTRAINT skill_files_check CHECK ((((octet_length(path) >= 1) AND (octet_length(path) <= 256)) AND (octet_length(content) <= 16777216)))
);


--
-- Name: TABLE skill_files; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_files IS 'The files of each installed skill artifact; append-only.';


--
-- Name: skill_status; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_status (
    skill_id text NOT NULL,
    version text,
    publisher text,
    artifact_digest text,
    status text NOT NULL,
    installed_by text,
    approvals text[] DEFAULT '{}'::text[] NOT NULL,
    failed_checks jsonb,
    stream_version bigint NOT NULL,
    installed_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT skill_status_status_check CHECK ((status = ANY (ARRAY['installed'::text, 'verified'::text, 'quarantined'::text, 'approved'::text, 'enabled'::text, 'disabled'::text, 'removed'::text])))
);


--
-- Name: TABLE skill_status; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_status IS 'One row per skill: its lifecycle state; projection skill_status.';


--
-- Name: skill_storage; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_storage (
    key text NOT NULL,
    value bytea NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT skill_storage_key_check CHECK (((octet_length(key) >= 1) AND (octet_length(key) <= 512)))
);


--
-- Name: TABLE skill_storage; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_storage IS 'Values of tier A skills'' storage capability; keys begin with the granted prefix.';


--
-- Name: skill_tools; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_tools (
    tool_id text NOT NULL,
    skill_id text NOT NULL
);


--
-- Name: TABLE skill_tools; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_tools IS 'Tool id -> the skill whose current artifact serves it.';


--
-- Name: skill_trust_keys; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_trust_keys (
    key_id text NOT NULL,
    publisher text NOT NULL,
    public_key bytea NOT NULL,
    source text NOT NULL,
    added_by text NOT NULL,
    added_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    revoked_at timestamp with time zone,
    revoked_by text,
    revoke_reason text,
    CONSTRAINT skill_trust_keys_check CHECK (((octet_length(public_key) = 32) AND (publisher ~ '^[a-z0-9][a-z0-9_-]{0,63}$'::text))),
    CONSTRAINT skill_trust_keys_source_check CHECK ((source = ANY (ARRAY['operator'::text, 'tofu'::text])))
);


--
-- Name: TABLE skill_trust_keys; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_trust_keys IS 'Trusted publisher keys (trust.key_added / trust.key_revoked); written by the skill functions only.';


--
-- Name: stream_heads; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.stream_heads (
    stream text NOT NULL,
    version bigint NOT NULL,
    prior bigint NOT NULL,
    CONSTRAINT stream_heads_prior_check CHECK ((prior >= 0)),
    CONSTRAINT stream_heads_version_check CHECK ((version >= 1))
)
WITH (fillfactor='80');


--
-- Name: TABLE stream_heads; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.stream_heads IS 'Each stream''s newest version; keeps (stream, version) unique across the partitions of ledger.events.';


--
-- Name: execledger_definitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.execledger_definitions (
    name text NOT NULL,
    sha256 text NOT NULL,
    schema_version integer NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE execledger_definitions; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.execledger_definitions IS 'The definition files (migrations/<role>/<name>.sql) applied to this database: their SHA-256 and the schema version they were applied at.';


--
-- Name: execledger_schema_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.execledger_schema_version (
    version integer NOT NULL
);


--
-- Name: events_0; Type: TABLE ATTACH; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events ATTACH PARTITION ledger.events_0 FOR VALUES FROM (MINVALUE) TO ('XID');


--
-- Name: events_XID; Type: TABLE ATTACH; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events ATTACH PARTITION ledger.events_XID FOR VALUES FROM ('XID') TO ('XID');


--
-- Name: events_XID; Type: TABLE ATTACH; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events ATTACH PARTITION ledger.events_XID FOR VALUES FROM ('XID') TO ('XID');


--
-- Name: events_XID; Type: TABLE ATTACH; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events ATTACH PARTITION ledger.events_XID FOR VALUES FROM ('XID') TO ('XID');


--
-- Name: events_default; Type: TABLE ATTACH; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events ATTACH PARTITION ledger.events_default DEFAULT;


--
-- Name: events position; Type: DEFAULT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events ALTER COLUMN "position" SET DEFAULT nextval('ledger.events_position_seq'::regclass);


--
-- Name: audit_trail audit_trail_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.audit_trail
    ADD CONSTRAINT audit_trail_pkey PRIMARY KEY ("position", kind);


--
-- Name: checkpoint_cosignatures checkpoint_cosignatures_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.checkpoint_cosignatures
    ADD CONSTRAINT checkpoint_cosignatures_pkey PRIMARY KEY (size, key_name, key_hash);


--
-- Name: checkpoints checkpoints_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (size);


--
-- Name: event_archives event_archives_partition_name_key; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.event_archives
    ADD CONSTRAINT event_archives_partition_name_key UNIQUE (partition_name);


--
-- Name: event_archives event_archives_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.event_archives
    ADD CONSTRAINT event_archives_pkey PRIMARY KEY (id);


--
-- Name: event_partitioning event_partitioning_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.event_partitioning
    ADD CONSTRAINT event_partitioning_pkey PRIMARY KEY (one);


--
-- Name: events_0 events_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events_0
    ADD CONSTRAINT events_pkey PRIMARY KEY (stream, version);


--
-- Name: log_faults log_faults_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.log_faults
    ADD CONSTRAINT log_faults_pkey PRIMARY KEY (tx_id, "position");


--
-- Name: log_leaves log_leaves_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.log_leaves
    ADD CONSTRAINT log_leaves_pkey PRIMARY KEY (leaf_index);


--
-- Name: log_nodes log_nodes_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.log_nodes
    ADD CONSTRAINT log_nodes_pkey PRIMARY KEY (level, idx);


--
-- Name: mcp_tokens mcp_tokens_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.mcp_tokens
    ADD CONSTRAINT mcp_tokens_pkey PRIMARY KEY (token_id);


--
-- Name: notify_secret notify_secret_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.notify_secret
    ADD CONSTRAINT notify_secret_pkey PRIMARY KEY (id);


--
-- Name: principals principals_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.principals
    ADD CONSTRAINT principals_pkey PRIMARY KEY (login_role);


--
-- Name: processes processes_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.processes
    ADD CONSTRAINT processes_pkey PRIMARY KEY (handle);


--
-- Name: projections projections_lock_key_key; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.projections
    ADD CONSTRAINT projections_lock_key_key UNIQUE (lock_key);


--
-- Name: projections projections_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.projections
    ADD CONSTRAINT projections_pkey PRIMARY KEY (name);


--
-- Name: queue queue_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.queue
    ADD CONSTRAINT queue_pkey PRIMARY KEY (id);


--
-- Name: queue_waiters queue_waiters_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.queue_waiters
    ADD CONSTRAINT queue_waiters_pkey PRIMARY KEY (registration);


--
-- Name: quota_denial_buckets quota_denial_buckets_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.quota_denial_buckets
    ADD CONSTRAINT quota_denial_buckets_pkey PRIMARY KEY (principal, bucket, bucket_start, reason);


--
-- Name: quota_denials quota_denials_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.quota_denials
    ADD CONSTRAINT quota_denials_pkey PRIMARY KEY (principal, run_id, reason);


--
-- Name: quota_usage_buckets quota_usage_buckets_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.quota_usage_buckets
    ADD CONSTRAINT quota_usage_buckets_pkey PRIMARY KEY (principal, bucket, bucket_start);


--
-- Name: quota_usage quota_usage_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.quota_usage
    ADD CONSTRAINT quota_usage_pkey PRIMARY KEY (principal);


--
-- Name: quota_usage_runs quota_usage_runs_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.quota_usage_runs
    ADD CONSTRAINT quota_usage_runs_pkey PRIMARY KEY (principal, run_id);


--
-- Name: request_status request_status_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.request_status
    ADD CONSTRAINT request_status_pkey PRIMARY KEY (id);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (principal, run_id);


--
-- Name: skill_artifacts skill_artifacts_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_artifacts
    ADD CONSTRAINT skill_artifacts_pkey PRIMARY KEY (digest);


--
-- Name: skill_files skill_files_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_files
    ADD CONSTRAINT skill_files_pkey PRIMARY KEY (artifact_digest, path);


--
-- Name: skill_status skill_status_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_status
    ADD CONSTRAINT skill_status_pkey PRIMARY KEY (skill_id);


--
-- Name: skill_storage skill_storage_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_storage
    ADD CONSTRAINT skill_storage_pkey PRIMARY KEY (key);


--
-- Name: skill_tools skill_tools_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_tools
    ADD CONSTRAINT skill_tools_pkey PRIMARY KEY (tool_id);


--
-- Name: skill_trust_keys skill_trust_keys_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_trust_keys
    ADD CONSTRAINT skill_trust_keys_pkey PRIMARY KEY (key_id);


--
-- Name: skills skills_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skills
    ADD CONSTRAINT skills_pkey PRIMARY KEY (skill_id);


--
-- Name: stream_heads stream_heads_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.stream_heads
    ADD CONSTRAINT stream_heads_pkey PRIMARY KEY (stream);


--
-- Name: execledger_definitions execledger_definitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.execledger_definitions
    ADD CONSTRAINT execledger_definitions_pkey PRIMARY KEY (name);


--
-- Name: audit_trail_principal_time_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX audit_trail_principal_time_idx ON ledger.audit_trail USING btree (principal, recorded_at);


--
-- Name: audit_trail_request_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX audit_trail_request_idx ON ledger.audit_trail USING btree (request_id, "position");


--
-- Name: audit_trail_time_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX audit_trail_time_idx ON ledger.audit_trail USING btree (recorded_at);


--
-- Name: checkpoint_cosignatures_key_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX checkpoint_cosignatures_key_idx ON ledger.checkpoint_cosignatures USING btree (key_name, key_hash, size);


--
-- Name: events_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_delivery_idx ON ONLY ledger.events USING btree (tx_id, "position");


--
-- Name: events_0_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_0_delivery_idx ON ledger.events_0 USING btree (tx_id, "position");


--
-- Name: events_XID_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_XID_delivery_idx ON ledger.events_XID USING btree (tx_id, "position");


--
-- Name: events_XID_stream_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX events_XID_stream_idx ON ledger.events_XID USING btree (stream, version);


--
-- Name: events_XID_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_XID_delivery_idx ON ledger.events_XID USING btree (tx_id, "position");


--
-- Name: events_XID_stream_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX events_XID_stream_idx ON ledger.events_XID USING btree (stream, version);


--
-- Name: events_XID_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_XID_delivery_idx ON ledger.events_XID USING btree (tx_id, "position");


--
-- Name: events_XID_stream_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX events_XID_stream_idx ON ledger.events_XID USING btree (stream, version);


--
-- Name: events_default_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_default_delivery_idx ON ledger.events_default USING btree (tx_id, "position");


--
-- Name: events_default_stream_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX events_default_stream_idx ON ledger.events_default USING btree (stream, version);


--
-- Name: log_leaves_position_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX log_leaves_position_idx ON ledger.log_leaves USING btree ("position");


--
-- Name: mcp_tokens_sha256_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX mcp_tokens_sha256_idx ON ledger.mcp_tokens USING btree (token_sha256);


--
-- Name: principals_principal_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX principals_principal_idx ON ledger.principals USING btree (principal);


--
-- Name: processes_run_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX processes_run_idx ON ledger.processes USING btree (principal, run_id);


--
-- Name: processes_running_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX processes_running_idx ON ledger.processes USING btree (owner) WHERE (state = 'running'::text);


--
-- Name: queue_approval_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX queue_approval_idx ON ledger.queue USING btree (approval_expires_at) WHERE (state = 'awaiting_approval'::text);


--
-- Name: queue_claim_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX queue_claim_idx ON ledger.queue USING btree (priority DESC, available_at, id) WHERE (state = 'pending'::text);


--
-- Name: queue_lease_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX queue_lease_idx ON ledger.queue USING btree (lease_expires_at) WHERE (state = 'running'::text);


--
-- Name: quota_denial_buckets_time_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX quota_denial_buckets_time_idx ON ledger.quota_denial_buckets USING btree (bucket, bucket_start);


--
-- Name: request_status_error_kind_submitted_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_error_kind_submitted_idx ON ledger.request_status USING btree (error_kind, submitted_at, id) WHERE (error_kind IS NOT NULL);


--
-- Name: request_status_error_submitted_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_error_submitted_idx ON ledger.request_status USING btree (submitted_at, id) WHERE (error_kind IS NOT NULL);


--
-- Name: request_status_idempotency_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX request_status_idempotency_idx ON ledger.request_status USING btree (principal, idempotency_key) WHERE (idempotency_key IS NOT NULL);


--
-- Name: request_status_principal_submitted_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_principal_submitted_idx ON ledger.request_status USING btree (principal, submitted_at, id);


--
-- Name: request_status_run_submitted_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_run_submitted_idx ON ledger.request_status USING btree (run_id, submitted_at, id) WHERE (run_id IS NOT NULL);


--
-- Name: request_status_submitted_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_submitted_idx ON ledger.request_status USING btree (submitted_at, id);


--
-- Name: request_status_unattested_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_unattested_idx ON ledger.request_status USING btree (finished_at) WHERE ((attestation_digest IS NULL) AND (finished_at IS NOT NULL));


--
-- Name: skill_tools_skill_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX skill_tools_skill_idx ON ledger.skill_tools USING btree (skill_id);


--
-- Name: skill_trust_keys_publisher_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX skill_trust_keys_publisher_idx ON ledger.skill_trust_keys USING btree (publisher);


--
-- Name: events_0_delivery_idx; Type: INDEX ATTACH; Schema: ledger; Owner: -
--

ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_0_delivery_idx;


--
-- Name: events_XID_delivery_idx; Type: INDEX ATTACH; Schema: ledger; Owner: -
--

ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_XID_delivery_idx;


--
-- Name: events_XID_delivery_idx; Type: INDEX ATTACH; Schema: ledger; Owner: -
--

ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_XID_delivery_idx;


--
-- Name: events_XID_delivery_idx; Type: INDEX ATTACH; Schema: ledger; Owner: -
--

ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_XID_delivery_idx;


--
-- Name: events_default_delivery_idx; Type: INDEX ATTACH; Schema: ledger; Owner: -
--

ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_default_delivery_idx;


--
-- Name: checkpoint_cosignatures checkpoint_cosignatures_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER checkpoint_cosignatures_append_only BEFORE DELETE OR UPDATE ON ledger.checkpoint_cosignatures FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoint_cosignatures ENABLE ALWAYS TRIGGER checkpoint_cosignatures_append_only;


--
-- Name: checkpoint_cosignatures checkpoint_cosignatures_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER checkpoint_cosignatures_no_truncate BEFORE TRUNCATE ON ledger.checkpoint_cosignatures FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoint_cosignatures ENABLE ALWAYS TRIGGER checkpoint_cosignatures_no_truncate;


--
-- Name: checkpoints checkpoints_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER checkpoints_append_only BEFORE DELETE OR UPDATE ON ledger.checkpoints FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoints ENABLE ALWAYS TRIGGER checkpoints_append_only;


--
-- Name: checkpoints checkpoints_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON ledger.checkpoints FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoints ENABLE ALWAYS TRIGGER checkpoints_no_truncate;


--
-- Name: events events_advance_stream_heads; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_advance_stream_heads AFTER INSERT ON ledger.events REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION ledger.advance_stream_heads();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_advance_stream_heads;


--
-- Name: events events_no_delete; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_no_delete BEFORE DELETE ON ledger.events FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_delete;


--
-- Name: events events_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON ledger.events FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_truncate;


--
-- Name: events events_no_update; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_no_update BEFORE UPDATE ON ledger.events FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_update;


--
-- Name: events events_retreat_stream_heads; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_retreat_stream_heads AFTER DELETE ON ledger.events REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION ledger.retreat_stream_heads();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_retreat_stream_heads;


--
-- Name: log_faults log_faults_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER log_faults_append_only BEFORE DELETE OR UPDATE ON ledger.log_faults FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_faults ENABLE ALWAYS TRIGGER log_faults_append_only;


--
-- Name: log_faults log_faults_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER log_faults_no_truncate BEFORE TRUNCATE ON ledger.log_faults FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_faults ENABLE ALWAYS TRIGGER log_faults_no_truncate;


--
-- Name: log_leaves log_leaves_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER log_leaves_append_only BEFORE DELETE OR UPDATE ON ledger.log_leaves FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_leaves ENABLE ALWAYS TRIGGER log_leaves_append_only;


--
-- Name: log_leaves log_leaves_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER log_leaves_no_truncate BEFORE TRUNCATE ON ledger.log_leaves FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_leaves ENABLE ALWAYS TRIGGER log_leaves_no_truncate;


--
-- Name: log_nodes log_nodes_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER log_nodes_append_only BEFORE DELETE OR UPDATE ON ledger.log_nodes FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_nodes ENABLE ALWAYS TRIGGER log_nodes_append_only;


--
-- Name: log_nodes log_nodes_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER log_nodes_no_truncate BEFORE TRUNCATE ON ledger.log_nodes FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_nodes ENABLE ALWAYS TRIGGER log_nodes_no_truncate;


--
-- Name: skill_artifacts skill_artifacts_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER skill_artifacts_append_only BEFORE DELETE OR UPDATE ON ledger.skill_artifacts FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_artifacts ENABLE ALWAYS TRIGGER skill_artifacts_append_only;


--
-- Name: skill_artifacts skill_artifacts_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER skill_artifacts_no_truncate BEFORE TRUNCATE ON ledger.skill_artifacts FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_artifacts ENABLE ALWAYS TRIGGER skill_artifacts_no_truncate;


--
-- Name: skill_files skill_files_append_only; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER skill_files_append_only BEFORE DELETE OR UPDATE ON ledger.skill_files FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_files ENABLE ALWAYS TRIGGER skill_files_append_only;


--
-- Name: skill_files skill_files_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER skill_files_no_truncate BEFORE TRUNCATE ON ledger.skill_files FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_files ENABLE ALWAYS TRIGGER skill_files_no_truncate;


--
-- Name: checkpoint_cosignatures checkpoint_cosignatures_size_fkey; Type: FK CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.checkpoint_cosignatures
    ADD CONSTRAINT checkpoint_cosignatures_size_fkey FOREIGN KEY (size) REFERENCES ledger.checkpoints(size);


--
-- Name: skill_files skill_files_artifact_digest_fkey; Type: FK CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_files
    ADD CONSTRAINT skill_files_artifact_digest_fkey FOREIGN KEY (artifact_digest) REFERENCES ledger.skill_artifacts(digest);


--
-- Name: skill_tools skill_tools_skill_id_fkey; Type: FK CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_tools
    ADD CONSTRAINT skill_tools_skill_id_fkey FOREIGN KEY (skill_id) REFERENCES ledger.skills(skill_id);


--
-- Name: skills skills_artifact_digest_fkey; Type: FK CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skills
    ADD CONSTRAINT skills_artifact_digest_fkey FOREIGN KEY (artifact_digest) REFERENCES ledger.skill_artifacts(digest);


--
-- Name: skills skills_previous_digest_fkey; Type: FK CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skills
    ADD CONSTRAINT skills_previous_digest_fkey FOREIGN KEY (previous_digest) REFERENCES ledger.skill_artifacts(digest);


--
-- Name: audit_trail; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.audit_trail ENABLE ROW LEVEL SECURITY;

--
-- Name: audit_trail audit_trail_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY audit_trail_all ON ledger.audit_trail FOR SELECT TO ledger_auditor, ledger_admin USING (true);


--
-- Name: audit_trail audit_trail_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY audit_trail_own ON ledger.audit_trail FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: quota_denial_buckets; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.quota_denial_buckets ENABLE ROW LEVEL SECURITY;

--
-- Name: quota_denial_buckets quota_denial_buckets_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_denial_buckets_all ON ledger.quota_denial_buckets FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: quota_denial_buckets quota_denial_buckets_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_denial_buckets_own ON ledger.quota_denial_buckets FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: quota_denial_buckets quota_denial_buckets_reader; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_denial_buckets_reader ON ledger.quota_denial_buckets FOR SELECT TO ledger_reader USING (true);


--
-- Name: quota_denials; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.quota_denials ENABLE ROW LEVEL SECURITY;

--
-- Name: quota_denials quota_denials_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_denials_all ON ledger.quota_denials FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: quota_denials quota_denials_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_denials_own ON ledger.quota_denials FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: quota_denials quota_denials_reader; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_denials_reader ON ledger.quota_denials FOR SELECT TO ledger_reader USING (true);


--
-- Name: quota_usage; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.quota_usage ENABLE ROW LEVEL SECURITY;

--
-- Name: quota_usage quota_usage_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_all ON ledger.quota_usage FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: quota_usage_buckets; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.quota_usage_buckets ENABLE ROW LEVEL SECURITY;

--
-- Name: quota_usage_buckets quota_usage_buckets_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_buckets_all ON ledger.quota_usage_buckets FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: quota_usage_buckets quota_usage_buckets_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_buckets_own ON ledger.quota_usage_buckets FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: quota_usage_buckets quota_usage_buckets_reader; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_buckets_reader ON ledger.quota_usage_buckets FOR SELECT TO ledger_reader USING (true);


--
-- Name: quota_usage quota_usage_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_own ON ledger.quota_usage FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: quota_usage quota_usage_reader; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_reader ON ledger.quota_usage FOR SELECT TO ledger_reader USING (true);


--
-- Name: quota_usage_runs; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.quota_usage_runs ENABLE ROW LEVEL SECURITY;

--
-- Name: quota_usage_runs quota_usage_runs_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_runs_all ON ledger.quota_usage_runs FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: quota_usage_runs quota_usage_runs_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_runs_own ON ledger.quota_usage_runs FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: quota_usage_runs quota_usage_runs_reader; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY quota_usage_runs_reader ON ledger.quota_usage_runs FOR SELECT TO ledger_reader USING (true);


--
-- Name: request_status; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.request_status ENABLE ROW LEVEL SECURITY;

--
-- Name: request_status request_status_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY request_status_all ON ledger.request_status FOR SELECT TO ledger_approver, ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: request_status request_status_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY request_status_own ON ledger.request_status FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: SCHEMA ledger; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA ledger TO ledger_submitter;
GRANT USAGE ON SCHEMA ledger TO ledger_approver;
GRANT USAGE ON SCHEMA ledger TO ledger_executor;
GRANT USAGE ON SCHEMA ledger TO ledger_auditor;
GRANT USAGE ON SCHEMA ledger TO ledger_admin;
GRANT USAGE ON SCHEMA ledger TO ledger_reader;
GRANT USAGE ON SCHEMA ledger TO ledger_skill_admin;
GRANT USAGE ON SCHEMA ledger TO ledger_mcp_gateway;


--
-- Name: FUNCTION advance_stream_heads(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.advance_stream_heads() FROM PUBLIC;


--
-- Name: FUNCTION append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) TO ledger_admin;


--
-- Name: FUNCTION apply_audit_trail(p_events ledger.projected_event[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_audit_trail(p_events ledger.projected_event[]) FROM PUBLIC;


--
-- Name: FUNCTION apply_audit_trail(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_audit_trail(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION apply_processes(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_processes(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION apply_quota_usage(p_events ledger.projected_event[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_quota_usage(p_events ledger.projected_event[]) FROM PUBLIC;


--
-- Name: FUNCTION apply_quota_usage(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_quota_usage(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION apply_requests(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_requests(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION apply_runs(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_runs(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION apply_skill_status(p_events ledger.projected_event[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_skill_status(p_events ledger.projected_event[]) FROM PUBLIC;


--
-- Name: FUNCTION apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.apply_skill_status(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION approve(request_id uuid, note text, input_digest text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.approve(request_id uuid, note text, input_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.approve(request_id uuid, note text, input_digest text) TO ledger_approver;


--
-- Name: FUNCTION awaiting_approval(p_limit integer, p_request_id uuid); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.awaiting_approval(p_limit integer, p_request_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.awaiting_approval(p_limit integer, p_request_id uuid) TO ledger_approver;
GRANT ALL ON FUNCTION ledger.awaiting_approval(p_limit integer, p_request_id uuid) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.awaiting_approval(p_limit integer, p_request_id uuid) TO ledger_admin;


--
-- Name: FUNCTION cancel(request_id uuid, reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) TO ledger_admin;


--
-- Name: FUNCTION claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean) FROM PUBLIC;


--
-- Name: FUNCTION claim_requests(executor text, max_requests integer, lease interval, record_claims boolean); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval, record_claims boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval, record_claims boolean) TO ledger_executor;


--
-- Name: FUNCTION claim_state(request_ids uuid[], claim_ids uuid[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[]) FROM PUBLIC;


--
-- Name: FUNCTION current_principal(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.current_principal() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_approver;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_executor;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_admin;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_skill_admin;


--
-- Name: FUNCTION decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) FROM PUBLIC;


--
-- Name: FUNCTION deny_approval(request_id uuid, note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.deny_approval(request_id uuid, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.deny_approval(request_id uuid, note text) TO ledger_approver;


--
-- Name: FUNCTION done_channel(p_principal text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.done_channel(p_principal text) FROM PUBLIC;


--
-- Name: FUNCTION end_run(run_id text, reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.end_run(run_id text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.end_run(run_id text, reason text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.end_run(run_id text, reason text) TO ledger_admin;


--
-- Name: FUNCTION event_partitions(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.event_partitions() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.event_partitions() TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.event_partitions() TO ledger_admin;


--
-- Name: TABLE event_archives; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.event_archives TO ledger_auditor;
GRANT SELECT ON TABLE ledger.event_archives TO ledger_executor;
GRANT SELECT ON TABLE ledger.event_archives TO ledger_admin;


--
-- Name: FUNCTION events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) TO ledger_admin;


--
-- Name: FUNCTION events_archive_plan(p_partition text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.events_archive_plan(p_partition text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.events_archive_plan(p_partition text) TO ledger_admin;


--
-- Name: FUNCTION events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) FROM PUBLIC;


--
-- Name: FUNCTION events_in_tx(p_tx xid8, p_from_pos bigint, p_to_pos bigint, p_types text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.events_in_tx(p_tx xid8, p_from_pos bigint, p_to_pos bigint, p_types text[]) FROM PUBLIC;


--
-- Name: FUNCTION events_partition_ahead(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.events_partition_ahead() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.events_partition_ahead() TO ledger_executor;
GRANT ALL ON FUNCTION ledger.events_partition_ahead() TO ledger_admin;


--
-- Name: FUNCTION executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval) TO ledger_executor;


--
-- Name: FUNCTION heartbeat(request_ids uuid[], claim_ids uuid[], lease interval); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) TO ledger_executor;


--
-- Name: FUNCTION in_record(p_tx xid8, p_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) TO ledger_admin;


--
-- Name: FUNCTION insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) FROM PUBLIC;


--
-- Name: FUNCTION is_int64(v jsonb); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.is_int64(v jsonb) FROM PUBLIC;


--
-- Name: FUNCTION legacy_done_ids(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.legacy_done_ids() FROM PUBLIC;


--
-- Name: FUNCTION lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) TO ledger_executor;


--
-- Name: FUNCTION lock_claims(request_ids uuid[], claim_ids uuid[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) TO ledger_executor;


--
-- Name: FUNCTION lock_expired_approvals(max_rows integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_expired_approvals(max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_expired_approvals(max_rows integer) TO ledger_executor;


--
-- Name: FUNCTION lock_expired_leases(max_rows integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_expired_leases(max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_expired_leases(max_rows integer) TO ledger_executor;


--
-- Name: FUNCTION lock_unattested(max_rows integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_unattested(max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_unattested(max_rows integer) TO ledger_executor;


--
-- Name: FUNCTION log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]) TO ledger_executor;


--
-- Name: FUNCTION log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean) TO ledger_executor;


--
-- Name: FUNCTION log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) TO ledger_admin;


--
-- Name: FUNCTION log_publish(p_size bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.log_publish(p_size bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.log_publish(p_size bigint) TO ledger_executor;


--
-- Name: FUNCTION log_record_faults(OUT recorded bigint, OUT present bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint) TO ledger_executor;


--
-- Name: FUNCTION log_size(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.log_size() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.log_size() TO ledger_executor;
GRANT ALL ON FUNCTION ledger.log_size() TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.log_size() TO ledger_admin;


--
-- Name: FUNCTION mcp_login_refusal(p_login name); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.mcp_login_refusal(p_login name) FROM PUBLIC;


--
-- Name: FUNCTION mcp_token_create(p_token_id text, p_sha256 bytea, p_login name, p_note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.mcp_token_create(p_token_id text, p_sha256 bytea, p_login name, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.mcp_token_create(p_token_id text, p_sha256 bytea, p_login name, p_note text) TO ledger_admin;


--
-- Name: FUNCTION mcp_token_login(p_sha256 bytea); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.mcp_token_login(p_sha256 bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.mcp_token_login(p_sha256 bytea) TO ledger_mcp_gateway;
GRANT ALL ON FUNCTION ledger.mcp_token_login(p_sha256 bytea) TO ledger_admin;


--
-- Name: FUNCTION mcp_token_revoke(p_token_id text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.mcp_token_revoke(p_token_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.mcp_token_revoke(p_token_id text) TO ledger_admin;


--
-- Name: FUNCTION notify_channel(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.notify_channel() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_approver;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_executor;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_admin;


--
-- Name: FUNCTION notify_done(p_principal text, p_request_id uuid); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) FROM PUBLIC;


--
-- Name: FUNCTION process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb) TO ledger_executor;


--
-- Name: FUNCTION process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) TO ledger_executor;


--
-- Name: FUNCTION projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) TO ledger_executor;


--
-- Name: FUNCTION projection_apply(p_name text, p_events ledger.projected_event[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_apply(p_name text, p_events ledger.projected_event[]) FROM PUBLIC;


--
-- Name: FUNCTION projection_apply(p_name text, p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_apply(p_name text, p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION projection_batch_end(p_from_tx xid8, p_from_pos bigint, p_max integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_batch_end(p_from_tx xid8, p_from_pos bigint, p_max integer) FROM PUBLIC;


--
-- Name: FUNCTION projection_event(p_name text, p_type text, p_payload json); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_event(p_name text, p_type text, p_payload json) FROM PUBLIC;


--
-- Name: FUNCTION projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) TO ledger_executor;


--
-- Name: FUNCTION projection_read(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_read(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) FROM PUBLIC;


--
-- Name: FUNCTION projection_rebuild_abort(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_rebuild_abort(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_rebuild_abort(p_name text) TO ledger_admin;


--
-- Name: FUNCTION projection_rebuild_begin(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_rebuild_begin(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_rebuild_begin(p_name text) TO ledger_admin;


--
-- Name: FUNCTION projection_rebuild_step(p_name text, p_max integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_rebuild_step(p_name text, p_max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_rebuild_step(p_name text, p_max integer) TO ledger_admin;


--
-- Name: FUNCTION projection_rebuild_swap(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_rebuild_swap(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_rebuild_swap(p_name text) TO ledger_admin;


--
-- Name: FUNCTION projection_register(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_register(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_register(p_name text) TO ledger_executor;


--
-- Name: FUNCTION projection_retry(p_name text, p_note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) TO ledger_admin;


--
-- Name: FUNCTION projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer) TO ledger_executor;


--
-- Name: FUNCTION projection_step_group(p_names text[], p_max integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_step_group(p_names text[], p_max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_step_group(p_names text[], p_max integer) TO ledger_executor;


--
-- Name: FUNCTION projection_types(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_types(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION projection_verify(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_verify(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_verify(p_name text) TO ledger_admin;
GRANT ALL ON FUNCTION ledger.projection_verify(p_name text) TO ledger_auditor;


--
-- Name: TABLE events; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.events TO ledger_auditor;
GRANT SELECT ON TABLE ledger.events TO ledger_executor;
GRANT SELECT ON TABLE ledger.events TO ledger_admin;


--
-- Name: FUNCTION read_all(after_tx xid8, after_position bigint, max_events integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_admin;


--
-- Name: FUNCTION refuse_archived_rebuild(p_caller text, p_projection text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.refuse_archived_rebuild(p_caller text, p_projection text) FROM PUBLIC;


--
-- Name: FUNCTION refuse_change(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.refuse_change() FROM PUBLIC;


--
-- Name: FUNCTION refuse_log_change(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.refuse_log_change() FROM PUBLIC;


--
-- Name: FUNCTION register_waiter(executor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.register_waiter(executor text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.register_waiter(executor text) TO ledger_executor;


--
-- Name: FUNCTION retreat_stream_heads(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.retreat_stream_heads() FROM PUBLIC;


--
-- Name: FUNCTION run_budget(run_id text, principal text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.run_budget(run_id text, principal text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.run_budget(run_id text, principal text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.run_budget(run_id text, principal text) TO ledger_approver;
GRANT ALL ON FUNCTION ledger.run_budget(run_id text, principal text) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.run_budget(run_id text, principal text) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.run_budget(run_id text, principal text) TO ledger_admin;


--
-- Name: FUNCTION set_run_budget(run_id text, max_calls integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) TO ledger_admin;


--
-- Name: FUNCTION skill_actor(p_op text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_actor(p_op text) FROM PUBLIC;


--
-- Name: FUNCTION skill_append(p_stream text, p_version bigint, p_type text, p_payload jsonb, p_actor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_append(p_stream text, p_version bigint, p_type text, p_payload jsonb, p_actor text) FROM PUBLIC;


--
-- Name: FUNCTION skill_approve(p_skill_id text, p_digest text, p_note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_approve(p_skill_id text, p_digest text, p_note text) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_disable(p_skill_id text, p_reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_disable(p_skill_id text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_disable(p_skill_id text, p_reason text) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_enable(p_skill_id text, p_note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_enable(p_skill_id text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_enable(p_skill_id text, p_note text) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_history(p_skill_id text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_history(p_skill_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_history(p_skill_id text) TO ledger_skill_admin;
GRANT ALL ON FUNCTION ledger.skill_history(p_skill_id text) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.skill_history(p_skill_id text) TO ledger_admin;


--
-- Name: FUNCTION skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_install(p_digest text, p_skill_id text, p_version text, p_publisher text, p_key_id text, p_public_key bytea, p_payload_digest text, p_signature bytea, p_tools text[], p_size bigint, p_paths text[], p_contents bytea[], p_tofu boolean) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_key_trusted(p_key_id text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_key_trusted(p_key_id text) FROM PUBLIC;


--
-- Name: TABLE skills; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.skills TO ledger_skill_admin;
GRANT SELECT ON TABLE ledger.skills TO ledger_executor;
GRANT SELECT ON TABLE ledger.skills TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skills TO ledger_admin;


--
-- Name: FUNCTION skill_lock(p_op text, p_skill_id text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_lock(p_op text, p_skill_id text) FROM PUBLIC;


--
-- Name: FUNCTION skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text) TO ledger_skill_admin;
GRANT ALL ON FUNCTION ledger.skill_record_audit(p_skill_id text, p_digest text, p_passed boolean, p_checks jsonb, p_trigger text) TO ledger_executor;


--
-- Name: FUNCTION skill_refuse(s ledger.skills, p_action text, p_reason text, p_actor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_refuse(s ledger.skills, p_action text, p_reason text, p_actor text) FROM PUBLIC;


--
-- Name: FUNCTION skill_remove(p_skill_id text, p_reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_remove(p_skill_id text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_remove(p_skill_id text, p_reason text) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_rollback(p_skill_id text, p_reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_rollback(p_skill_id text, p_reason text) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_set(s ledger.skills, p_type text, p_payload jsonb, p_actor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_set(s ledger.skills, p_type text, p_payload jsonb, p_actor text) FROM PUBLIC;


--
-- Name: FUNCTION skill_status_check(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_status_check(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;


--
-- Name: FUNCTION skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_trust_add(p_publisher text, p_key_id text, p_public_key bytea, p_note text) TO ledger_skill_admin;


--
-- Name: FUNCTION skill_trust_revoke(p_key_id text, p_reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.skill_trust_revoke(p_key_id text, p_reason text) TO ledger_skill_admin;


--
-- Name: FUNCTION submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_admin;


--
-- Name: FUNCTION submit(tool text, input text, run_id text, idempotency_key text, context text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_admin;


--
-- Name: FUNCTION submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]) TO ledger_admin;


--
-- Name: FUNCTION unregister_waiter(executor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.unregister_waiter(executor text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.unregister_waiter(executor text) TO ledger_executor;


--
-- Name: FUNCTION unsealed_events(p_limit integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.unsealed_events(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.unsealed_events(p_limit integer) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.unsealed_events(p_limit integer) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.unsealed_events(p_limit integer) TO ledger_admin;


--
-- Name: FUNCTION usage_refusal(p_type text, j jsonb); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.usage_refusal(p_type text, j jsonb) FROM PUBLIC;


--
-- Name: FUNCTION usage_refusal(p_type text, p_payload text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.usage_refusal(p_type text, p_payload text) FROM PUBLIC;


--
-- Name: FUNCTION uuid_v7(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.uuid_v7() FROM PUBLIC;


--
-- Name: FUNCTION wake_waiters(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.wake_waiters() FROM PUBLIC;


--
-- Name: TABLE audit_trail; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.audit_trail TO ledger_submitter;
GRANT SELECT ON TABLE ledger.audit_trail TO ledger_auditor;
GRANT SELECT ON TABLE ledger.audit_trail TO ledger_admin;


--
-- Name: TABLE checkpoint_cosignatures; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.checkpoint_cosignatures TO ledger_executor;
GRANT SELECT ON TABLE ledger.checkpoint_cosignatures TO ledger_auditor;
GRANT SELECT ON TABLE ledger.checkpoint_cosignatures TO ledger_admin;


--
-- Name: TABLE checkpoints; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.checkpoints TO ledger_executor;
GRANT SELECT ON TABLE ledger.checkpoints TO ledger_auditor;
GRANT SELECT ON TABLE ledger.checkpoints TO ledger_admin;


--
-- Name: TABLE event_partitioning; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.event_partitioning TO ledger_admin;
GRANT SELECT ON TABLE ledger.event_partitioning TO ledger_auditor;


--
-- Name: COLUMN event_partitioning.width; Type: ACL; Schema: ledger; Owner: -
--

GRANT UPDATE(width) ON TABLE ledger.event_partitioning TO ledger_admin;


--
-- Name: COLUMN event_partitioning.ahead; Type: ACL; Schema: ledger; Owner: -
--

GRANT UPDATE(ahead) ON TABLE ledger.event_partitioning TO ledger_admin;


--
-- Name: TABLE events_0; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.events_0 TO ledger_auditor;
GRANT SELECT ON TABLE ledger.events_0 TO ledger_executor;
GRANT SELECT ON TABLE ledger.events_0 TO ledger_admin;


--
-- Name: TABLE log_faults; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.log_faults TO ledger_executor;
GRANT SELECT ON TABLE ledger.log_faults TO ledger_auditor;
GRANT SELECT ON TABLE ledger.log_faults TO ledger_admin;


--
-- Name: TABLE log_leaves; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.log_leaves TO ledger_executor;
GRANT SELECT ON TABLE ledger.log_leaves TO ledger_auditor;
GRANT SELECT ON TABLE ledger.log_leaves TO ledger_admin;


--
-- Name: TABLE log_nodes; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.log_nodes TO ledger_executor;
GRANT SELECT ON TABLE ledger.log_nodes TO ledger_auditor;
GRANT SELECT ON TABLE ledger.log_nodes TO ledger_admin;


--
-- Name: TABLE mcp_tokens; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.mcp_tokens TO ledger_admin;
GRANT SELECT ON TABLE ledger.mcp_tokens TO ledger_auditor;


--
-- Name: TABLE principals; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.principals TO ledger_auditor;
GRANT SELECT ON TABLE ledger.principals TO ledger_executor;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE ledger.principals TO ledger_admin;


--
-- Name: TABLE processes; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.processes TO ledger_executor;
GRANT SELECT ON TABLE ledger.processes TO ledger_auditor;
GRANT SELECT ON TABLE ledger.processes TO ledger_admin;


--
-- Name: TABLE projections; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.projections TO ledger_executor;
GRANT SELECT ON TABLE ledger.projections TO ledger_auditor;
GRANT SELECT ON TABLE ledger.projections TO ledger_admin;
GRANT SELECT ON TABLE ledger.projections TO ledger_reader;


--
-- Name: TABLE queue; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.queue TO ledger_executor;
GRANT SELECT ON TABLE ledger.queue TO ledger_auditor;
GRANT SELECT ON TABLE ledger.queue TO ledger_admin;


--
-- Name: TABLE queue_waiters; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.queue_waiters TO ledger_executor;


--
-- Name: TABLE quota_denial_buckets; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.quota_denial_buckets TO ledger_submitter;
GRANT SELECT ON TABLE ledger.quota_denial_buckets TO ledger_executor;
GRANT SELECT ON TABLE ledger.quota_denial_buckets TO ledger_auditor;
GRANT SELECT ON TABLE ledger.quota_denial_buckets TO ledger_admin;
GRANT SELECT ON TABLE ledger.quota_denial_buckets TO ledger_reader;


--
-- Name: TABLE quota_denials; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.quota_denials TO ledger_submitter;
GRANT SELECT ON TABLE ledger.quota_denials TO ledger_executor;
GRANT SELECT ON TABLE ledger.quota_denials TO ledger_auditor;
GRANT SELECT ON TABLE ledger.quota_denials TO ledger_admin;
GRANT SELECT ON TABLE ledger.quota_denials TO ledger_reader;


--
-- Name: TABLE quota_usage; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.quota_usage TO ledger_submitter;
GRANT SELECT ON TABLE ledger.quota_usage TO ledger_executor;
GRANT SELECT ON TABLE ledger.quota_usage TO ledger_auditor;
GRANT SELECT ON TABLE ledger.quota_usage TO ledger_admin;
GRANT SELECT ON TABLE ledger.quota_usage TO ledger_reader;


--
-- Name: TABLE quota_usage_buckets; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.quota_usage_buckets TO ledger_submitter;
GRANT SELECT ON TABLE ledger.quota_usage_buckets TO ledger_executor;
GRANT SELECT ON TABLE ledger.quota_usage_buckets TO ledger_auditor;
GRANT SELECT ON TABLE ledger.quota_usage_buckets TO ledger_admin;
GRANT SELECT ON TABLE ledger.quota_usage_buckets TO ledger_reader;


--
-- Name: TABLE quota_usage_runs; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.quota_usage_runs TO ledger_submitter;
GRANT SELECT ON TABLE ledger.quota_usage_runs TO ledger_executor;
GRANT SELECT ON TABLE ledger.quota_usage_runs TO ledger_auditor;
GRANT SELECT ON TABLE ledger.quota_usage_runs TO ledger_admin;
GRANT SELECT ON TABLE ledger.quota_usage_runs TO ledger_reader;


--
-- Name: TABLE request_status; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.request_status TO ledger_submitter;
GRANT SELECT ON TABLE ledger.request_status TO ledger_approver;
GRANT SELECT ON TABLE ledger.request_status TO ledger_executor;
GRANT SELECT ON TABLE ledger.request_status TO ledger_auditor;
GRANT SELECT ON TABLE ledger.request_status TO ledger_admin;


--
-- Name: TABLE requests; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.requests TO ledger_submitter;
GRANT SELECT ON TABLE ledger.requests TO ledger_approver;
GRANT SELECT ON TABLE ledger.requests TO ledger_executor;
GRANT SELECT ON TABLE ledger.requests TO ledger_auditor;
GRANT SELECT ON TABLE ledger.requests TO ledger_admin;


--
-- Name: TABLE runs; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.runs TO ledger_executor;
GRANT SELECT ON TABLE ledger.runs TO ledger_auditor;
GRANT SELECT ON TABLE ledger.runs TO ledger_admin;


--
-- Name: TABLE skill_artifacts; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.skill_artifacts TO ledger_skill_admin;
GRANT SELECT ON TABLE ledger.skill_artifacts TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_artifacts TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_artifacts TO ledger_admin;


--
-- Name: TABLE skill_files; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.skill_files TO ledger_skill_admin;
GRANT SELECT ON TABLE ledger.skill_files TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_files TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_files TO ledger_admin;


--
-- Name: TABLE skill_status; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.skill_status TO ledger_submitter;
GRANT SELECT ON TABLE ledger.skill_status TO ledger_approver;
GRANT SELECT ON TABLE ledger.skill_status TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_status TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_status TO ledger_admin;
GRANT SELECT ON TABLE ledger.skill_status TO ledger_skill_admin;


--
-- Name: TABLE skill_storage; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE ledger.skill_storage TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_storage TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_storage TO ledger_admin;


--
-- Name: TABLE skill_tools; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.skill_tools TO ledger_skill_admin;
GRANT SELECT ON TABLE ledger.skill_tools TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_tools TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_tools TO ledger_admin;


--
-- Name: TABLE skill_trust_keys; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.skill_trust_keys TO ledger_skill_admin;
GRANT SELECT ON TABLE ledger.skill_trust_keys TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_trust_keys TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_trust_keys TO ledger_admin;


--
-- Name: TABLE stream_heads; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.stream_heads TO ledger_auditor;
GRANT SELECT ON TABLE ledger.stream_heads TO ledger_admin;


--
-- Name: TABLE execledger_definitions; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.execledger_definitions TO ledger_submitter;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_approver;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_executor;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_auditor;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_admin;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_reader;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_skill_admin;
GRANT SELECT ON TABLE public.execledger_definitions TO ledger_mcp_gateway;


--
-- Name: TABLE execledger_schema_version; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_submitter;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_approver;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_executor;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_auditor;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_admin;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_reader;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_skill_admin;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_mcp_gateway;


--
-- PostgreSQL database dump complete
--


