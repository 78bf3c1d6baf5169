-- done_channel is the completion channel of a principal: "ledger_done_"
-- and 128 bits of SHA-256(secret || SHA-256(secret || principal)) in hex
-- (nested, so no length extension of one name yields another's).
--
-- SET enable_seqscan = on (014): it reads the one-row notify_secret, and its
-- callers run with enable_seqscan off, under which each call cost ~29 ms.

CREATE OR REPLACE FUNCTION ledger.done_channel(p_principal text) RETURNS text
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'on'
    AS $$
    SELECT 'ledger_done_' || left(encode(sha256(s.secret || sha256(s.secret || convert_to(p_principal, 'UTF8'))), 'hex'), 32)
    FROM ledger.notify_secret s
$$;

REVOKE ALL ON FUNCTION ledger.done_channel(p_principal text) FROM PUBLIC;
