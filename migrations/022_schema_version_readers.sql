-- Every command checks the schema version and its definitions after it
-- connects (migrations.Inspect): the roles created after 006 and 019 can
-- read them too, so that a login holding only one of them gets the same
-- "run execledger migrate" message as every other.
GRANT SELECT ON public.execledger_schema_version TO ledger_reader, ledger_skill_admin, ledger_mcp_gateway;
GRANT SELECT ON public.execledger_definitions TO ledger_reader, ledger_skill_admin, ledger_mcp_gateway;
