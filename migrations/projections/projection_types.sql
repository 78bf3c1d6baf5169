-- projection_types names the event types an asynchronous read model's
-- apply function consumes: the one list its own step and a group step
-- (projection_step_group) read the batch with.

CREATE OR REPLACE FUNCTION ledger.projection_types(p_name text) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_name
        WHEN 'audit_trail' THEN ARRAY['request.decided', 'policy.decided', 'approval.granted', 'approval.denied',
                                      'execution.finished', 'execution.completed', 'request.cancelled', 'lease.expired',
                                      'attestation.signed']
        WHEN 'quota_usage' THEN ARRAY['tool.requested', 'request.decided', 'policy.decided', 'approval.denied',
                                      'execution.finished', 'execution.completed', 'egress.connection', 'run.budget_set',
                                      'run.ended', 'budget.consumed']
        WHEN 'skill_status' THEN ARRAY['skill.installed', 'skill.audited', 'skill.quarantined', 'skill.approved',
                                       'skill.enabled', 'skill.disabled', 'skill.rolled_back', 'skill.removed',
                                       'skill.refused']
    END
$$;

REVOKE ALL ON FUNCTION ledger.projection_types(p_name text) FROM PUBLIC;
