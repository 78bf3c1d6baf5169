-- The console's request list pages newest first by keyset
-- ((submitted_at, id) < the last row's), over any number of requests. Each
-- index below serves a filter as a backward range scan that stops after a
-- page:
--   request_status_submitted_idx           no filter (an auditor's list);
--   request_status_principal_submitted_idx a principal, which row
--                                           security adds for a submitter;
--   request_status_run_submitted_idx       a run;
--   request_status_error_submitted_idx     an error kind, and the states
--                                           failed, denied and cancelled,
--                                           whose rows all carry one.
-- None indexes state, which every request's updates change: the updates of
-- request_status stay HOT. error_kind changes once, when a request fails,
-- and run_id, principal and submitted_at never do.
CREATE INDEX request_status_submitted_idx ON ledger.request_status (submitted_at, id);
CREATE INDEX request_status_principal_submitted_idx ON ledger.request_status (principal, submitted_at, id);
CREATE INDEX request_status_run_submitted_idx ON ledger.request_status (run_id, submitted_at, id) WHERE run_id IS NOT NULL;
CREATE INDEX request_status_error_submitted_idx ON ledger.request_status (submitted_at, id) WHERE error_kind IS NOT NULL;
-- The failures of one error kind, for a filter by a kind that is rare or
-- absent (a range, not a walk of every failure).
CREATE INDEX request_status_error_kind_submitted_idx ON ledger.request_status (error_kind, submitted_at, id) WHERE error_kind IS NOT NULL;
