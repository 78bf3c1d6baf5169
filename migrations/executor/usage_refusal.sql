-- depends: events/is_int64.sql

CREATE OR REPLACE FUNCTION ledger.usage_refusal(p_type text, j jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    bad text;
BEGIN
    IF p_type IS DISTINCT FROM 'execution.finished' AND p_type IS DISTINCT FROM 'execution.completed'
       AND p_type IS DISTINCT FROM 'egress.connection' THEN
        RETURN NULL;
    END IF;
    IF p_type IN ('execution.finished', 'execution.completed') THEN
        IF coalesce(jsonb_typeof(j -> 'resources'), 'null') = 'null' THEN
            RETURN NULL;
        END IF;
        IF jsonb_typeof(j -> 'resources') <> 'object' THEN
            RETURN 'resources must be an object';
        END IF;
        SELECT r.key INTO bad FROM jsonb_each(j -> 'resources') r WHERE NOT ledger.is_int64(r.value) LIMIT 1;
        IF FOUND THEN
            RETURN 'resources.' || bad || ' must be an integer';
        END IF;
        RETURN NULL;
    END IF;
    IF coalesce(jsonb_typeof(j -> 'allowed'), 'null') NOT IN ('boolean', 'null') THEN
        RETURN 'allowed must be a boolean';
    END IF;
    SELECT k INTO bad FROM unnest(ARRAY['bytes_up', 'bytes_down']) k
    WHERE j ? k AND jsonb_typeof(j -> k) <> 'null' AND NOT ledger.is_int64(j -> k) LIMIT 1;
    IF FOUND THEN
        RETURN bad || ' must be an integer';
    END IF;
    RETURN NULL;
END $$;

REVOKE ALL ON FUNCTION ledger.usage_refusal(p_type text, j jsonb) FROM PUBLIC;

-- The same for a payload as text, parsed only for the types checked.
CREATE OR REPLACE FUNCTION ledger.usage_refusal(p_type text, p_payload text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_type IS DISTINCT FROM 'execution.finished' AND p_type IS DISTINCT FROM 'execution.completed'
       AND p_type IS DISTINCT FROM 'egress.connection' THEN
        RETURN NULL;
    END IF;
    RETURN ledger.usage_refusal(p_type, p_payload::jsonb);
END $$;

REVOKE ALL ON FUNCTION ledger.usage_refusal(p_type text, p_payload text) FROM PUBLIC;
