-- log_size is the number of leaves: the tree's size.

CREATE OR REPLACE FUNCTION ledger.log_size() RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce((SELECT l.leaf_index + 1 FROM ledger.log_leaves l ORDER BY l.leaf_index DESC LIMIT 1), 0)
$$;

REVOKE ALL ON FUNCTION ledger.log_size() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.log_size() TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.log_size() TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.log_size() TO ledger_admin;
