-- depends: api/done_channel.sql
-- depends: api/legacy_done_ids.sql
-- depends: events/insert_events.sql
-- depends: executor/claim_refusal.sql
-- depends: executor/claim_state.sql
-- depends: executor/usage_refusal.sql
-- depends: projections/apply_requests.sql
-- depends: projections/apply_runs.sql

-- executor_record is how an executor login records requests: in one
-- call, events about the requests it names (claim_requests, each under
-- claim_ids[i]) and, per request, the state change that follows from them
-- (kinds[i], NULL for none):
--   start          an authorized call begins (charges its run's budget when
--                  charges[i]);
--   await_approval it waits for ledger.approve, its claim released;
--   requeue        a rescued request is pending again;
--   finish         it ends in states[i] with error_kinds[i], errors[i],
--                  outputs[i], tiers[i] (charged to its run when
--                  charges[i]: a call run inline in its claim, whose
--                  request.decided and execution.completed come together);
--   attest         a request that ended in SQL gets its attestation.
-- Events (streams, versions, types, payloads, metadatas: as append_events)
-- go on request:<id> streams of named requests, or on channel:<name>
-- streams as channel.message on behalf of the request its metadata's
-- correlation_id names (version NULL: the stream's next). Each event type
-- and each state change needs its request in the right claim_state:
--   held:          request.decided, policy.decided, budget.consumed,
--                  execution.started, approval.requested,
--                  execution.finished, execution.completed,
--                  request.cancelled, egress.connection, capability.used,
--                  channel.published, channel.message; start and
--                  await_approval (not yet started); finish
--   lease_gone:    lease.expired; requeue; finish
--   approval_gone: approval.denied; finish
--   unattested:    attest
--   any of these:  attestation.signed
-- A request that finishes or is attested must have as its last event in
-- the call an attestation.signed or an execution.completed whose
-- request_id is the request's, whose attestation_digest is that of its
-- envelope, and whose statement names the request and agrees with the
-- outcome (success, error kind); ledger.requests.attestation_digest is
-- that digest. Nothing else an executor login can call writes requests.
--
-- Both grammars (021): the compact one's request.decided (claim, decision,
-- budget, start) and execution.completed (outcome and attestation), and
-- the full one's events they stand for. A call's budget charge is a
-- budget.consumed, or a request.decided with a budget member.
--
-- The request read model: for the compact grammar's common changes (a
-- start or an await decided by request.decided, a denial decided by it, an
-- outcome in execution.completed) the rows are written from what the call
-- holds, the parsed payloads it checks anyway, after checking that the
-- events say the same; any other call derives them from its events with
-- ledger.apply_requests, as a rebuild does, and checks the result.
--
-- A rescued request (requeue) keeps its place in the queue (015): the
-- claim orders by (priority DESC, available_at, id), and requeue leaves
-- available_at alone.
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval DEFAULT NULL::interval) RETURNS TABLE("position" bigint, hash bytea)
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

REVOKE ALL ON FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval) TO ledger_executor;
