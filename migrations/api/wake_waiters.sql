-- SET enable_seqscan = on (014): it reads the one-row notify_secret, and its
-- callers run with enable_seqscan off, under which each call cost ~29 ms.

CREATE OR REPLACE FUNCTION ledger.wake_waiters() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'on'
    AS $$
BEGIN
    PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    WITH taken AS (SELECT x.registration FROM ledger.queue_waiters x FOR UPDATE SKIP LOCKED)
    DELETE FROM ledger.queue_waiters w USING taken t WHERE w.registration = t.registration;
    IF FOUND THEN
        PERFORM pg_notify('ledger_request_pending', '');
    END IF;
END $$;

REVOKE ALL ON FUNCTION ledger.wake_waiters() FROM PUBLIC;
