-- depends: log/log_size.sql

-- log_checkpoint records a signed checkpoint of the tree at p_size (the
-- log's size, or less) and appends checkpoint.signed to stream log, in the
-- caller's transaction. Sizes only grow. p_published: no witness is
-- required, the checkpoint is published as it is signed.

CREATE OR REPLACE FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean) RETURNS bigint
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

REVOKE ALL ON FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean) TO ledger_executor;
