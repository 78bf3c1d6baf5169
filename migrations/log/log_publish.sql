-- log_publish marks checkpoint p_size published (its witnesses have
-- cosigned it, as the sealer has checked).

CREATE OR REPLACE FUNCTION ledger.log_publish(p_size bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    UPDATE ledger.checkpoints SET published_at = clock_timestamp() WHERE size = p_size AND published_at IS NULL;
    RETURN FOUND;
END $$;

REVOKE ALL ON FUNCTION ledger.log_publish(p_size bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.log_publish(p_size bigint) TO ledger_executor;
