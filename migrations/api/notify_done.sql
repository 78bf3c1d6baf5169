-- depends: api/done_channel.sql
-- depends: api/legacy_done_ids.sql

-- notify_done tells the request's principal, on its own channel, and wakes
-- the ledger_request_done listeners (with no payload, unless
-- legacy_done_ids).

CREATE OR REPLACE FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_notify(ledger.done_channel(p_principal), p_request_id::text);
    PERFORM pg_notify('ledger_request_done', CASE WHEN ledger.legacy_done_ids() THEN p_request_id::text ELSE '' END);
END $$;

REVOKE ALL ON FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) FROM PUBLIC;
