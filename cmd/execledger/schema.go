package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/migrations"
)

// login is who a command is connected as: the login role and the ledger
// group roles it is a member of, for the errors that say which it lacks.
type login struct {
	name  string
	roles []string
}

// readLogin reads the session's login and its ledger roles. pg_roles is
// readable by every login, also in a database never migrated.
func readLogin(ctx context.Context, q migrations.Querier) (login, error) {
	var l login
	err := q.QueryRow(ctx, `SELECT current_user::text, ARRAY(SELECT rolname::text FROM pg_roles
WHERE rolname LIKE 'ledger\_%' AND pg_has_role(oid, 'MEMBER') ORDER BY rolname)`).Scan(&l.name, &l.roles)
	if err != nil {
		return l, fmt.Errorf("read the login's roles: %w", err)
	}
	return l, nil
}

// checkSchema refuses a database whose schema is not the one this binary
// was built for: every command that connects (serve, the clients, the
// auditors' commands) calls it first, so that each says the same thing
// instead of failing on a missing table. It writes nothing.
func checkSchema(ctx context.Context, q migrations.Querier) error {
	st, err := migrations.Inspect(ctx, q)
	if err != nil {
		return err
	}
	return schemaError(st)
}

// checkSchemaAs is checkSchema for login l. Every ledger role may read
// the schema's version and definitions (006, 019, 022); a login that
// still may not (a role of a schema older than 022) goes on unchecked:
// what it calls fails on its own if the schema is wrong. A login holding
// no ledger role is told so.
func checkSchemaAs(ctx context.Context, q migrations.Querier, l login) error {
	err := checkSchema(ctx, q)
	if contract.SQLState(err) != contract.SQLStateInsufficientPriv {
		return err
	}
	if len(l.roles) > 0 {
		return nil
	}
	return fmt.Errorf("login %q may not read the ledger: %w", l.name, err)
}

// schemaError says what is wrong with a schema at st, or nil.
func schemaError(st migrations.Status) error {
	switch {
	case st.Version == 0:
		return fmt.Errorf("the database has no execledger schema (version 0), this binary needs version %d: run `execledger migrate`", st.Latest)
	case st.Version < st.Latest:
		return fmt.Errorf("the database schema is at version %d, this binary needs %d: run `execledger migrate`", st.Version, st.Latest)
	case st.Version > st.Latest:
		return fmt.Errorf("the database schema is at version %d, newer than this binary knows (%d, execledger %s): use the execledger that migrated it, or a newer one",
			st.Version, st.Latest, readVersion().Version)
	case !st.UpToDate():
		differ := append(st.Pending, st.Retired...)
		return fmt.Errorf("%d of the database's definitions differ from this binary's (%s, …): run `execledger migrate`", len(differ), differ[0])
	}
	return nil
}

// neededRoles names, per top-level command, the ledger roles any one of
// which lets it work (README, "Roles"); it only words errors.
var neededRoles = map[string][]string{
	"submit":    {"ledger_submitter"},
	"cancel":    {"ledger_submitter", "ledger_admin"},
	"status":    {"ledger_submitter", "ledger_approver", "ledger_auditor", "ledger_admin"},
	"requests":  {"ledger_submitter", "ledger_approver", "ledger_auditor", "ledger_admin"},
	"approvals": {"ledger_approver", "ledger_auditor", "ledger_admin"},
	"approve":   {"ledger_approver"},
	"deny":      {"ledger_approver"},
	"audit":     {"ledger_auditor", "ledger_admin"},
	"export":    {"ledger_auditor", "ledger_admin"},
	"verify":    {"ledger_auditor", "ledger_admin"},
	"prove":     {"ledger_auditor", "ledger_admin"},
	"projector": {"ledger_admin"},
	"archive":   {"ledger_admin"},
	"skill":     {"ledger_skill_admin"},
	"serve":     {"ledger_executor"},
}

// explainDenial adds to a failure of cmd that the database refused for
// lack of privilege (SQLSTATE 42501) which role the login lacks, when it
// holds none of those cmd needs; other errors are returned as they are.
func explainDenial(cmd *cobra.Command, l login, err error) error {
	var pgErr *pgconn.PgError
	var ce *cmdError
	if l.name == "" || !errors.As(err, &pgErr) || pgErr.Code != contract.SQLStateInsufficientPriv || !errors.As(err, &ce) {
		return err
	}
	top := cmd
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	need := neededRoles[top.Name()]
	if len(need) == 0 {
		return err
	}
	for _, r := range need {
		for _, has := range l.roles {
			if r == has {
				return err // the refusal has another reason, which it says
			}
		}
	}
	holds := "holds no ledger role"
	if len(l.roles) > 0 {
		holds = "holds only " + strings.Join(l.roles, ", ")
	}
	which := need[0]
	if len(need) > 1 {
		which = "one of " + strings.Join(need, ", ")
	}
	return &cmdError{code: ce.code, err: ce.err, msg: fmt.Sprintf("%s\nlogin %q %s; %s needs %s: GRANT %s TO %s",
		ce.msg, l.name, holds, commandName(top), which, need[0], quoteIdent(l.name))}
}

// quoteIdent quotes a role name for the GRANT a message suggests.
func quoteIdent(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }) < 0 {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
