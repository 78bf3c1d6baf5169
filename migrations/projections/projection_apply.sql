-- depends: projections/apply_audit_trail.sql
-- depends: projections/apply_processes.sql
-- depends: projections/apply_quota_usage.sql
-- depends: projections/apply_requests.sql
-- depends: projections/apply_runs.sql
-- depends: projections/apply_skill_status.sql

-- projection_apply applies projection p_name's events in a range to
-- whichever tables search_path finds first.

CREATE OR REPLACE FUNCTION ledger.projection_apply(p_name text, p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
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

REVOKE ALL ON FUNCTION ledger.projection_apply(p_name text, p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;

-- projection_apply with the events of a batch already read
-- (projection_read): the asynchronous read models, which
-- projection_step_group applies from one read.
CREATE OR REPLACE FUNCTION ledger.projection_apply(p_name text, p_events ledger.projected_event[]) RETURNS bigint
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

REVOKE ALL ON FUNCTION ledger.projection_apply(p_name text, p_events ledger.projected_event[]) FROM PUBLIC;
