-- uuid_v7 makes time-ordered ids (RFC 9562 version 7): new rows land at the
-- right edge of the id indexes instead of on random pages. It has no SET
-- search_path, so that it can be inlined into its callers (re-planning it
-- per call cost 13% of a submit); every name in it is schema-qualified
-- instead, and only SECURITY DEFINER functions with a fixed search_path
-- call it.

CREATE OR REPLACE FUNCTION ledger.uuid_v7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
    SELECT pg_catalog.encode(
        pg_catalog.set_bit(pg_catalog.set_bit(
            pg_catalog.overlay(pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                pg_catalog.substring(pg_catalog.int8send(pg_catalog.int8(
                    pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)), 3),
                1, 6),
            52, 1), 53, 1), 'hex')::pg_catalog.uuid
$$;

REVOKE ALL ON FUNCTION ledger.uuid_v7() FROM PUBLIC;
