-- depends: projections/projection_read.sql
-- depends: projections/projection_types.sql

-- audit_trail: decisions and outcomes, with the request's principal, tool
-- and run from its tool.requested, in either grammar (021): request.decided
-- is a decision (and a denial's outcome), execution.completed an outcome
-- with its own attestation. It takes the events of a batch already read
-- (projection_read), and picks its own.

CREATE OR REPLACE FUNCTION ledger.apply_audit_trail(p_events ledger.projected_event[]) RETURNS bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
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
END $$;

REVOKE ALL ON FUNCTION ledger.apply_audit_trail(p_events ledger.projected_event[]) FROM PUBLIC;

-- The events of a range: read once (projection_read), then applied.
CREATE OR REPLACE FUNCTION ledger.apply_audit_trail(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE sql
    AS $$
    SELECT ledger.apply_audit_trail(ledger.projection_read(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                           ledger.projection_types('audit_trail')))
$$;

REVOKE ALL ON FUNCTION ledger.apply_audit_trail(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;
