-- depends: events/insert_events.sql

-- append_events appends free-form events, with the same optimistic
-- concurrency, to the one stream no ledger function owns: policy (the
-- policy sets executors load). request:, run:, channel: and process:
-- streams are written only by the SQL API and the executor functions
-- below, which check who may write. Superusers (migrations, tests,
-- repairs) may write any stream.

CREATE OR REPLACE FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) RETURNS TABLE("position" bigint, hash bytea)
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

REVOKE ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) TO ledger_admin;
