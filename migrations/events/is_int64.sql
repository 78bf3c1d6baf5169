-- usage_refusal says why an executor's event cannot carry the figures
-- the quota read model adds up, or NULL when it can: execution.finished's
-- resources are an object of 64-bit integers, egress.connection's allowed
-- (when there) a boolean and its byte counts such integers. A value the projection
-- could not cast would stop it at that event for good, rebuilds included,
-- so executor_record and process_record refuse it (SQLSTATE 22023).

CREATE OR REPLACE FUNCTION ledger.is_int64(v jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_typeof(v) = 'number' AND v::numeric = trunc(v::numeric)
           AND v::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
$$;

REVOKE ALL ON FUNCTION ledger.is_int64(v jsonb) FROM PUBLIC;
