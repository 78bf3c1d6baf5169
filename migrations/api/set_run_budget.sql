-- depends: api/current_principal.sql
-- depends: projections/apply_runs.sql

CREATE OR REPLACE FUNCTION ledger.set_run_budget(run_id text, max_calls integer) RETURNS void
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

REVOKE ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) TO ledger_admin;
