//go:build unix

package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/console"
	"github.com/execledger/execledger/internal/testrepl"
	"github.com/execledger/execledger/ledger"
)

// TestReadsFromTheReplica: with a replica URL the pages read from the
// standby, as the signed-in login, and the actions go to the primary. The
// standby's replay is paused: a request submitted then is on the primary
// and not on the page until replay resumes, while an approval made on the
// page is recorded on the primary at once.
func TestReadsFromTheReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pair := testrepl.New(t, testrepl.Options{})
	admin, err := pgxpool.New(ctx, pair.PrimaryURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{
		"CREATE ROLE rep_alice LOGIN PASSWORD 'alice-pw'", "GRANT ledger_submitter TO rep_alice",
		"CREATE ROLE rep_carol LOGIN PASSWORD 'carol-pw'", "GRANT ledger_approver TO rep_carol",
		"INSERT INTO ledger.principals (login_role, principal) VALUES ('rep_alice', 'alice'), ('rep_carol', 'carol')",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	alice, err := pgxpool.New(ctx, testrepl.WithUser(pair.PrimaryURL(), "rep_alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	submit := func(text string) uuid.UUID {
		id, err := ledger.Submit(ctx, alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": text}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	replicated := submit("replicated")
	pair.PauseReplay(t)
	unreplicated := submit("not on the standby yet")

	strip := func(u string) string {
		p, _ := url.Parse(u)
		p.User = nil
		return p.String()
	}
	srv, err := console.New(console.Options{LoginURL: strip(pair.PrimaryURL()), ReplicaURL: strip(pair.StandbyURL()),
		AllowUncheckedPasswords: true, // the pair's servers trust local logins
		SignInAttempts:          50})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := newTestServer(t, srv)
	carol := newClient(t, ts)
	if code, body := carol.signIn("rep_carol", "carol-pw"); code != http.StatusOK || !strings.Contains(body, "Signed in as") {
		t.Fatalf("sign-in: %d\n%s", code, body)
	}
	_, page := carol.get("/requests")
	if !strings.Contains(page, replicated.String()) || strings.Contains(page, unreplicated.String()) {
		t.Fatalf("the requests page does not read the paused standby:\n%s", page)
	}
	if code, _ := carol.get("/requests/" + unreplicated.String()); code != http.StatusNotFound {
		t.Fatalf("the unreplicated request's page: %d, want 404 (not on the standby)", code)
	}
	// The action goes to the primary: a pending request may be approved
	// before any executor claims it.
	code, body := carol.post("/approvals/"+unreplicated.String(), url.Values{"decision": {"approve"}, "note": {"from the replica's page"}})
	if code != http.StatusOK || !strings.Contains(body, "approved") {
		t.Fatalf("approve through the console: %d\n%s", code, body)
	}
	var by string
	if err := admin.QueryRow(ctx, `SELECT metadata->>'login_role' FROM ledger.events WHERE stream = 'request:' || $1::text AND type = 'approval.granted'`,
		unreplicated).Scan(&by); err != nil || by != "rep_carol" {
		t.Fatalf("approval.granted on the primary: %q, %v", by, err)
	}
	pair.ResumeReplay(t)
	waitFor(t, "the request on the replica's page once replay resumes", func() bool {
		_, page := carol.get("/requests")
		return strings.Contains(page, unreplicated.String())
	})
}
