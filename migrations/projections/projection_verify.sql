-- depends: projections/projection_apply.sql
-- depends: events/archive.sql

-- Verify: rebuild into scratch tables (temporary, dropped at commit) and
-- compare every row with the live tables, as of the caller's snapshot,
-- which must be the transaction's (REPEATABLE READ): an inline projection
-- against every event the snapshot sees, an asynchronous one against the
-- events up to its checkpoint. Rows are compared as text, matched by
-- primary key; the first difference in key order is named.

CREATE OR REPLACE FUNCTION ledger.projection_verify(p_name text) RETURNS TABLE(table_name text, live_rows bigint, rebuilt_rows bigint, live_digest text, rebuilt_digest text, first_difference text)
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


SET default_table_access_method = heap;

REVOKE ALL ON FUNCTION ledger.projection_verify(p_name text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_verify(p_name text) TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.projection_verify(p_name text) TO ledger_auditor;
