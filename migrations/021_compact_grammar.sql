-- The compact event grammar (issue 24). Two signatures change, so their old
-- forms are dropped here and the definition files create the new ones:
--   ledger.claim_requests gains record_claims: the executor that writes
--     request.decided (the claim, its decision and the start in one event)
--     claims without appending request.claimed;
--   ledger.insert_events also returns each event's recorded_at, so that
--     ledger.executor_record builds the read model's rows from what it
--     wrote instead of reading its own events back.
-- ledger.executor_record_row gains what executor_record derives the
-- request read model from without a second look at the events.
DROP FUNCTION ledger.claim_requests(text, integer, interval);
DROP FUNCTION ledger.insert_events(text[], bigint[], text[], text[], text[]);
ALTER TYPE ledger.executor_record_row
    ADD ATTRIBUTE last_ord bigint,
    ADD ATTRIBUTE decided_ord bigint,
    ADD ATTRIBUTE verdict text,
    ADD ATTRIBUTE fast boolean,
    ADD ATTRIBUTE r_state text,
    ADD ATTRIBUTE r_error_kind text,
    ADD ATTRIBUTE r_error text,
    ADD ATTRIBUTE r_output jsonb,
    ADD ATTRIBUTE r_tier text,
    ADD ATTRIBUTE budget_events bigint,
    ADD ATTRIBUTE refusal text;
