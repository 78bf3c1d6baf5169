CREATE OR REPLACE FUNCTION ledger.register_waiter(executor text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM ledger.queue_waiters w
    WHERE w.registration IN (SELECT x.registration FROM ledger.queue_waiters x
                             WHERE x.executor = register_waiter.executor FOR UPDATE SKIP LOCKED);
    INSERT INTO ledger.queue_waiters (executor) VALUES (register_waiter.executor);
$$;

REVOKE ALL ON FUNCTION ledger.register_waiter(executor text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.register_waiter(executor text) TO ledger_executor;
