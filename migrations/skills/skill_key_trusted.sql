-- skill_key_trusted reports whether key p_key_id is in the trust store
-- and not revoked.

CREATE OR REPLACE FUNCTION ledger.skill_key_trusted(p_key_id text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT EXISTS (SELECT 1 FROM ledger.skill_trust_keys k WHERE k.key_id = p_key_id AND k.revoked_at IS NULL)
$$;

REVOKE ALL ON FUNCTION ledger.skill_key_trusted(p_key_id text) FROM PUBLIC;
