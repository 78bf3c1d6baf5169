-- The demo logins of docker-compose.yml, made by its init-logins service
-- (psql) after `execledger migrate`, on every `docker compose up`. It only
-- adds what is missing: a login that exists keeps its password and
-- settings, a mapping that exists keeps its principal.
--
--   login        password  principal  roles
--   demo         demo      demo       ledger_submitter
--   demo_alice   alice     alice      ledger_submitter
--   demo_bob     bob       bob        ledger_submitter
--   demo_carol   carol     carol      ledger_approver (approves others' requests)
--   grafana      grafana   (none)     ledger_reader, read-only (Grafana's data source)
--   execledger_serve  execledger  (none)  ledger_executor: serve's login, nothing more
--
-- Demo passwords, listed in docs/compose.md: never use these logins outside
-- a demo.
DO $$
DECLARE
    l record;
BEGIN
    FOR l IN SELECT * FROM (VALUES
        ('demo', 'demo', 'ledger_submitter'),
        ('demo_alice', 'alice', 'ledger_submitter'),
        ('demo_bob', 'bob', 'ledger_submitter'),
        ('demo_carol', 'carol', 'ledger_approver'),
        ('grafana', 'grafana', 'ledger_reader'),
        ('execledger_serve', 'execledger', 'ledger_executor')
    ) AS v (login, password, grant_role) LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = l.login) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L', l.login, l.password);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- made meanwhile by another session
            END;
        END IF;
        IF NOT pg_has_role(l.login, l.grant_role, 'MEMBER') THEN
            EXECUTE format('GRANT %I TO %I', l.grant_role, l.login);
        END IF;
    END LOOP;
END $$;

-- Grafana runs whatever SQL a dashboard holds: it reads, within 10 s
-- (README, "A read-only login for Grafana").
ALTER ROLE grafana SET default_transaction_read_only = on;
ALTER ROLE grafana SET statement_timeout = '10s';

-- The principal is taken from the login (session_user), never from an
-- argument of ledger.submit.
INSERT INTO ledger.principals (login_role, principal) VALUES
    ('demo', 'demo'),
    ('demo_alice', 'alice'),
    ('demo_bob', 'bob'),
    ('demo_carol', 'carol')
ON CONFLICT DO NOTHING;
