package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/testdb"
)

// TestErrorsSayTheCause: each error says what is wrong once, and what
// to do: no doubled prefix, no TLS noise before a refused login, the
// role a login lacks, a request's state before a digest, and no usage
// line for what the database refused.
func TestErrorsSayTheCause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	submitter := db.LoginRole(t, "ops", "ledger_submitter")
	approver := db.LoginRole(t, "boss", "ledger_approver")
	nobody := db.LoginRole(t, "")
	sub := []string{"DATABASE_URL=" + submitter.URL}

	// The database's message once, without its function's name again.
	r := execute(t, sub, "", "submit", "no tool", "{}")
	if r.code != exitUsage || !strings.Contains(r.stderr, "submit: invalid input: tool must be") || strings.Contains(r.stderr, "ledger.submit:") {
		t.Errorf("submit of a bad tool: %+v", r)
	}

	// A login that does not exist: the server's words, not sslmode=prefer's
	// first, refused attempt. (testdb's URL disables TLS; without sslmode
	// pgx tries TLS first.)
	u := strings.Replace(db.URL, "sslmode=disable", "", 1)
	u, err := testdb.WithUser(u, "nobody_"+uuid.NewString()[:6])
	if err != nil {
		t.Fatal(err)
	}
	r = execute(t, []string{"DATABASE_URL=" + u}, "", "requests", "list")
	if r.code != exitError || !strings.Contains(r.stderr, `" does not exist`) || strings.Contains(r.stderr, "tls error") {
		t.Errorf("a login that does not exist: %+v", r)
	}

	// A login with no ledger role: which one the command needs, and how to grant it.
	r = execute(t, []string{"DATABASE_URL=" + nobody.URL}, "", "submit", "echo", "{}")
	want := `login "` + nobody.Name + `" holds no ledger role; submit needs ledger_submitter: GRANT ledger_submitter TO ` + nobody.Name
	if r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Errorf("submit without ledger_submitter: %+v\nwant %q", r, want)
	}
	// A login with another role than the one the command needs.
	r = execute(t, []string{"DATABASE_URL=" + approver.URL}, "", "submit", "echo", "{}")
	want = `login "` + approver.Name + `" holds only ledger_approver; submit needs ledger_submitter: GRANT ledger_submitter TO ` + approver.Name
	if r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Errorf("submit as an approver: %+v\nwant %q", r, want)
	}
	r = execute(t, sub, "", "export", "--out", t.TempDir()+"/b")
	if r.code != exitError || !strings.Contains(r.stderr, "export needs one of ledger_auditor, ledger_admin: GRANT ledger_auditor TO "+submitter.Name) {
		t.Errorf("export as a submitter: %+v", r)
	}
	r = execute(t, sub, "", "approve", uuid.NewString())
	if r.code != exitError || !strings.Contains(r.stderr, "holds only ledger_submitter; approve needs ledger_approver: GRANT ledger_approver TO "+submitter.Name) {
		t.Errorf("approve as a submitter: %+v", r)
	}
	// A login that holds the role it needs is refused for another reason,
	// which the database says; no role advice then.
	unmapped := db.LoginRole(t, "", "ledger_submitter")
	r = execute(t, []string{"DATABASE_URL=" + unmapped.URL}, "", "submit", "echo", "{}")
	if r.code != exitError || !strings.Contains(r.stderr, "is not mapped to a principal") || strings.Contains(r.stderr, "GRANT") {
		t.Errorf("submit as a login with no principal: %+v", r)
	}

	// approve of a final request with a digest that is not its input's:
	// the state, not the digest; a refusal, not a usage error.
	r = execute(t, sub, "", "submit", "echo", `{"text":"x"}`)
	id := strings.TrimSpace(r.stdout)
	if r := execute(t, sub, "", "cancel", id); r.code != exitOK {
		t.Fatalf("cancel: %+v", r)
	}
	r = execute(t, []string{"DATABASE_URL=" + approver.URL}, "", "approve", id, "--input-digest", "sha256:abc")
	if r.code != exitNotOK || !strings.Contains(r.stderr, "has already ended (cancelled)") || strings.Contains(r.stderr, "usage:") ||
		strings.Contains(r.stderr, "sha256:abc") {
		t.Errorf("approve of a cancelled request: %+v", r)
	}
	// A waiting one with the wrong digest: refused (exit 3), no usage line.
	r = execute(t, sub, "", "submit", "echo", `{"text":"y"}`)
	id = strings.TrimSpace(r.stdout)
	r = execute(t, []string{"DATABASE_URL=" + approver.URL}, "", "approve", id, "--input-digest", "sha256:abc")
	if r.code != exitNotOK || !strings.Contains(r.stderr, "not the sha256:abc that was approved") || strings.Contains(r.stderr, "usage:") {
		t.Errorf("approve with a wrong digest: %+v", r)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events WHERE type = 'approval.granted'").Scan(&n); err != nil || n != 0 {
		t.Errorf("approvals recorded: %d, %v", n, err)
	}
}
