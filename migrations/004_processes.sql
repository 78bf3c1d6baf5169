-- 004: the end of a run, and process.run's background processes.

-- A run ends when its principal says so (ledger.end_run). Requests of an
-- ended run are denied at claim (reason run.ended), and its run_owned
-- background processes are stopped.
ALTER TABLE ledger.runs ADD COLUMN ended_at timestamptz;

-- end_run ends a run of the caller's principal: run.ended on stream
-- run:<principal>/<run_id>. It returns false, and appends nothing, when the
-- run had already ended.
CREATE FUNCTION ledger.end_run(run_id text, reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text := ledger.current_principal();
    v_version   bigint;
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
    INSERT INTO ledger.runs AS r (principal, run_id, version, ended_at)
    VALUES (v_principal, end_run.run_id, 1, clock_timestamp())
    ON CONFLICT (principal, run_id) DO UPDATE SET ended_at = clock_timestamp(), version = r.version + 1
        WHERE r.ended_at IS NULL
    RETURNING r.version INTO v_version;
    IF v_version IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('run:' || v_principal || '/' || end_run.run_id, v_version, 'run.ended',
            json_build_object('principal', v_principal, 'run_id', end_run.run_id, 'reason', end_run.reason),
            json_build_object('actor', v_principal, 'login_role', session_user));
    RETURN true;
END $$;

-- Background processes, one row per handle: the read model of stream
-- process:<handle> (process.started, process.stop_requested,
-- egress.connection, process.ended, process.lost), written by executors in
-- the transactions that append those events.
CREATE TABLE ledger.processes (
    handle            uuid        PRIMARY KEY,
    principal         text        NOT NULL,
    run_id            text        NOT NULL,
    request_id        uuid        NOT NULL,
    mode              text        NOT NULL,
    tier              text        NOT NULL,
    command           text        NOT NULL,
    -- The supervising executor process, "<host>/<boot id>/<pid>/<start
    -- ticks>": an executor on the same host can tell whether it still lives.
    owner             text        NOT NULL,
    pid               int         NOT NULL,
    pid_start         bigint      NOT NULL, -- start time in clock ticks, against pid reuse
    state             text        NOT NULL DEFAULT 'running',
    started_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    stop_requested_at timestamptz,
    ended_at          timestamptz,
    end_reason        text,
    exit_code         int,
    signal            int,
    result            jsonb,                -- exit status, output and usage at the end
    CONSTRAINT processes_mode_check CHECK (mode IN ('run_owned', 'detached')),
    CONSTRAINT processes_state_check CHECK (state IN ('running', 'ended', 'lost')),
    CONSTRAINT processes_ended_check CHECK ((state = 'running') = (ended_at IS NULL))
);
COMMENT ON TABLE ledger.processes IS 'Background processes of process.run; derived from the process:<handle> streams.';
CREATE INDEX processes_running_idx ON ledger.processes (owner) WHERE state = 'running';
CREATE INDEX processes_run_idx ON ledger.processes (principal, run_id);

REVOKE ALL ON ledger.processes FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.end_run(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.end_run(text, text) TO ledger_submitter, ledger_admin;
GRANT SELECT, INSERT, UPDATE ON ledger.processes TO ledger_executor;
GRANT SELECT ON ledger.processes TO ledger_auditor, ledger_admin;
