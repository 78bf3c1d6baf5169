-- 007: checkpoints of the projection engine (package projector).
--
-- A projection follows the log in ledger.read_all's gapless delivery order
-- and writes its read model and its checkpoint in the same transaction, so
-- a crash never applies an event twice or skips one. Its checkpoint is the
-- read_all cursor (tx_id, position) of the last event it has passed, events
-- of types it does not consume included.
--
-- The engine runs inside `execledger serve`, whose login holds only
-- ledger_executor. As with the requests since migration 6, that role gets
-- no table writes here: it moves a checkpoint, records a failure and
-- clears one only through the functions below, which keep the checkpoint
-- moving forward only and write the failure's event in the same
-- transaction as the state it describes.

CREATE TABLE ledger.projections (
    name            text        PRIMARY KEY,
    -- The engine's session advisory lock is (projector_lock_class, lock_key):
    -- a key per row, so no two projections can ever share a lock, as two
    -- names hashed to 32 bits could.
    lock_key        int         GENERATED ALWAYS AS IDENTITY UNIQUE,
    tx_id           xid8        NOT NULL DEFAULT '0',
    position        bigint      NOT NULL DEFAULT 0,
    state           text        NOT NULL DEFAULT 'active',
    applied_total   bigint      NOT NULL DEFAULT 0,
    failed_tx_id    xid8,
    failed_position bigint,
    failed_type     text,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT projections_name_check CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 63),
    CONSTRAINT projections_state_check CHECK (state IN ('active', 'failed')),
    CONSTRAINT projections_failure_check CHECK (
        (state = 'active' AND failed_tx_id IS NULL AND failed_position IS NULL AND failed_type IS NULL AND last_error IS NULL)
        OR (state = 'failed' AND failed_tx_id IS NOT NULL AND failed_position IS NOT NULL AND last_error IS NOT NULL))
);
COMMENT ON TABLE ledger.projections IS 'One row per projection: its checkpoint in ledger.read_all order and its state.';
COMMENT ON COLUMN ledger.projections.tx_id IS 'Checkpoint: tx_id of the last event passed (0 before the first).';
COMMENT ON COLUMN ledger.projections.position IS 'Checkpoint: position of the last event passed (0 before the first).';
COMMENT ON COLUMN ledger.projections.lock_key IS 'Second key of the runner''s session advisory lock.';
COMMENT ON COLUMN ledger.projections.applied_total IS 'Events handed to the projection''s apply functions and committed.';

-- projection_register makes the row of a projection the first time an
-- engine runs it, and returns its lock key.
CREATE FUNCTION ledger.projection_register(p_name text) RETURNS int
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key int;
BEGIN
    INSERT INTO ledger.projections (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
    SELECT p.lock_key INTO STRICT v_key FROM ledger.projections p WHERE p.name = p_name;
    RETURN v_key;
END $$;

-- projection_advance moves an active projection's checkpoint from the
-- cursor the caller read to a later one, counting the events it applied.
-- Called in the transaction that applied them. A checkpoint that moved
-- meanwhile (another runner, a retry, a hand edit) or a failed projection
-- is a serialization failure: the caller rolls back its batch and reads
-- again.
CREATE FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint,
                                          p_to_tx xid8, p_to_position bigint, p_applied bigint)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
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

-- projection_fail stops a projection at an event (or, for a checkpoint
-- that names no event, at its checkpoint): state failed, the event's place
-- and type, last_error 'failed at position P: <error>', and a
-- projection.failed event on stream projection:<name>, in one transaction.
-- The checkpoint stays where it is, before the failed event. A projection
-- already failed is left as it is.
CREATE FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- projection_retry clears a failure so that the runner applies the failed
-- event again from the checkpoint, recording projection.retried. false,
-- and nothing written, when the projection is not failed.
CREATE FUNCTION ledger.projection_retry(p_name text, p_note text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

REVOKE ALL ON ledger.projections FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_register(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_advance(text, xid8, bigint, xid8, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_fail(text, xid8, bigint, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.projection_retry(text, text) FROM PUBLIC;

GRANT SELECT ON ledger.projections TO ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.projection_register(text) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.projection_advance(text, xid8, bigint, xid8, bigint, bigint) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.projection_fail(text, xid8, bigint, text, text) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.projection_retry(text, text) TO ledger_executor, ledger_admin;
