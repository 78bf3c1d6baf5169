CREATE OR REPLACE FUNCTION ledger.unregister_waiter(executor text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM ledger.queue_waiters w
    WHERE w.registration IN (SELECT x.registration FROM ledger.queue_waiters x
                             WHERE x.executor = unregister_waiter.executor FOR UPDATE SKIP LOCKED);
$$;

REVOKE ALL ON FUNCTION ledger.unregister_waiter(executor text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.unregister_waiter(executor text) TO ledger_executor;
