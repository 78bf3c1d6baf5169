-- skill_lock returns a skill's row, locked, or raises.

CREATE OR REPLACE FUNCTION ledger.skill_lock(p_op text, p_skill_id text) RETURNS ledger.skills
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    s ledger.skills;
BEGIN
    SELECT * INTO s FROM ledger.skills WHERE skill_id = p_skill_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: no skill %', p_op, p_skill_id USING ERRCODE = 'no_data_found';
    END IF;
    RETURN s;
END $$;

REVOKE ALL ON FUNCTION ledger.skill_lock(p_op text, p_skill_id text) FROM PUBLIC;
