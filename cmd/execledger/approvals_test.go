package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/readmodel"
	"github.com/execledger/execledger/ledger"
)

// TestApproverSeesWhatItApproves: an approver (ledger_approver alone,
// which reads neither the log nor the audit trail) lists what waits with
// the exact input and its digest, approves by that digest, and then sees
// the input no more; requests show degrades for every role, saying what
// it left out and why; a submitter may not list approvals, a reader may
// read no request.
func TestApproverSeesWhatItApproves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newRequestsEnv(t)
	ann := e.db.LoginRole(t, "ann", "ledger_approver")
	reader := e.db.LoginRole(t, "", "ledger_reader")
	approver := []string{"DATABASE_URL=" + ann.URL}
	readerEnv := []string{"DATABASE_URL=" + reader.URL}

	input := `{"ms":7}`
	waiting := submitID(t, e.alice, "sleep", input, "--run", "r-approve")
	waitState(t, e.alice, waiting, ledger.StateAwaitingApproval)
	done := submitID(t, e.alice, "echo", `{"text":"finished"}`)
	waitState(t, e.alice, done, ledger.StateSucceeded)

	// approvals --json: the input as recorded and the digest of its text.
	r := execute(t, approver, "", "approvals", "--json")
	var rows []ledger.Awaiting
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &rows) != nil || len(rows) != 1 || rows[0].ID != waiting {
		t.Fatalf("approvals --json as the approver: %+v", r)
	}
	a := rows[0]
	var compact bytes.Buffer
	if a.Principal != "alice" || a.Tool != "sleep" || a.RunID == nil || *a.RunID != "r-approve" ||
		json.Compact(&compact, a.Input) != nil || compact.String() != `{"ms":7}` {
		t.Fatalf("the waiting request's row: %+v (input %s)", a, a.Input)
	}
	// The input's text as SQL returns it is what the digest is of.
	var text, digest string
	if err := ann.Pool.QueryRow(ctx, "SELECT input::text, input_digest FROM ledger.awaiting_approval()").Scan(&text, &digest); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(text)); digest != a.InputDigest || digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("input %s, digest %s (listed %s): not the digest of the input", text, digest, a.InputDigest)
	}
	r = execute(t, approver, "", "approvals")
	for _, want := range []string{waiting.String(), "Input digest: " + a.InputDigest, `"ms": 7`,
		"execledger approve " + waiting.String() + " --input-digest " + a.InputDigest} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("approvals lacks %q: %+v", want, r)
		}
	}

	// requests show, as the approver: the request, its input and digest;
	// the decisions and the events left out, each with the reason.
	r = execute(t, approver, "", "requests", "show", waiting.String())
	for _, want := range []string{"State:     awaiting_approval", "Awaiting approval:", "Input digest: " + a.InputDigest, `"ms": 7`,
		"left out: " + readmodel.DecisionsUnreadable, "left out: " + readmodel.LogUnreadable} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("show as the approver lacks %q: %+v", want, r)
		}
	}
	r = execute(t, approver, "", "requests", "show", waiting.String(), "--json")
	var d readmodel.Description
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &d) != nil || d.Approval == nil || d.Approval.InputDigest != a.InputDigest ||
		d.DecisionsUnreadable == "" || d.LogUnreadable == "" {
		t.Fatalf("show --json as the approver: %+v", r)
	}
	// The finished request: the approver sees its row (request_status),
	// not its recorded input.
	r = execute(t, approver, "", "requests", "show", done.String())
	if r.code != exitOK || strings.Contains(r.stdout, "Awaiting approval") || strings.Contains(r.stdout, "Input") ||
		!strings.Contains(r.stdout, "State:     succeeded") {
		t.Fatalf("show of a finished request as the approver: %+v", r)
	}

	// As the submitter: its own request, the decisions it reads, no input
	// of the approval (it may not call awaiting_approval), the log left
	// out; approvals refused with what it needs.
	r = execute(t, e.alice, "", "requests", "show", waiting.String())
	if r.code != exitOK || strings.Contains(r.stdout, "Awaiting approval:") || strings.Contains(r.stdout, readmodel.DecisionsUnreadable) ||
		!strings.Contains(r.stdout, "left out: "+readmodel.LogUnreadable) {
		t.Fatalf("show as the submitter: %+v", r)
	}
	if r := execute(t, e.alice, "", "approvals"); r.code != exitError || !strings.Contains(r.stderr, "needs ledger_approver") {
		t.Fatalf("approvals as a submitter: %+v", r)
	}
	// As the auditor: everything, the waiting input too.
	r = execute(t, e.auditor, "", "requests", "show", waiting.String())
	if r.code != exitOK || !strings.Contains(r.stdout, "Input digest: "+a.InputDigest) || strings.Contains(r.stdout, "left out") ||
		!strings.Contains(r.stdout, "tool.requested") {
		t.Fatalf("show as the auditor: %+v", r)
	}
	// As a reader: no request at all, and which roles would.
	r = execute(t, readerEnv, "", "requests", "show", waiting.String())
	if r.code != exitError || !strings.Contains(r.stderr, "may read no requests") || !strings.Contains(r.stderr, "ledger_reader") {
		t.Fatalf("show as a reader: %+v", r)
	}
	if r := execute(t, readerEnv, "", "approvals"); r.code != exitError || !strings.Contains(r.stderr, "needs ledger_approver") {
		t.Fatalf("approvals as a reader: %+v", r)
	}

	// In SQL: the approver reads no event, and awaiting_approval gives no
	// row (so no input) for a request that does not wait.
	var n int
	if err := ann.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events").Scan(&n); contract.SQLState(err) != contract.SQLStateInsufficientPriv {
		t.Fatalf("the approver read ledger.events: %d, %v", n, err)
	}
	if err := ann.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.awaiting_approval(10, $1)", done).Scan(&n); err != nil || n != 0 {
		t.Fatalf("awaiting_approval of a finished request: %d rows, %v", n, err)
	}

	// Approve by the digest shown: it runs, and its input is gone from
	// the approver's view.
	if r := execute(t, approver, "", "approve", waiting.String(), "--input-digest", a.InputDigest); r.code != exitOK {
		t.Fatalf("approve by the shown digest: %+v", r)
	}
	waitState(t, e.alice, waiting, ledger.StateSucceeded)
	if r := execute(t, approver, "", "approvals"); r.code != exitOK || r.stdout != "" || !strings.Contains(r.stderr, "nothing waits") {
		t.Fatalf("approvals once decided: %+v", r)
	}
	if r := execute(t, approver, "", "requests", "show", waiting.String()); r.code != exitOK || strings.Contains(r.stdout, `"ms": 7`) {
		t.Fatalf("show of the approved request as the approver: %+v", r)
	}
	if r := execute(t, approver, "", "approvals", "--limit", "-1"); r.code != exitUsage {
		t.Fatalf("approvals --limit -1: %+v", r)
	}
	// --limit 0 is no limit, as everywhere; 1 the oldest.
	second := submitID(t, e.alice, "sleep", `{"ms":8}`)
	third := submitID(t, e.alice, "sleep", `{"ms":9}`)
	waitState(t, e.alice, third, ledger.StateAwaitingApproval)
	waitState(t, e.alice, second, ledger.StateAwaitingApproval)
	for limit, want := range map[string]int{"0": 2, "1": 1} {
		r := execute(t, approver, "", "approvals", "--limit", limit, "--json")
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &rows) != nil || len(rows) != want || rows[0].ID != second {
			t.Errorf("approvals --limit %s: %+v", limit, r)
		}
	}
}
