-- depends: api/current_principal.sql
-- depends: projections/apply_runs.sql

CREATE OR REPLACE FUNCTION ledger.end_run(run_id text, reason text DEFAULT NULL::text) RETURNS boolean
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

REVOKE ALL ON FUNCTION ledger.end_run(run_id text, reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.end_run(run_id text, reason text) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.end_run(run_id text, reason text) TO ledger_admin;
