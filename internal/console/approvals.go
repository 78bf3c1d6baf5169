package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// awaiting is one request that waits for approval.
type awaiting struct {
	ID          uuid.UUID
	Principal   string
	Tool        string
	RunID       *string
	InputDigest string
	SubmittedAt time.Time
	Input       string // the recorded input, when the login may call ledger.awaiting_approval
	Own         bool   // submitted by the login's own principal: it may not decide
}

// awaitingPage is how many waiting requests the page shows, oldest first.
const awaitingPage = 100

type approvalsData struct {
	IsApprover bool
	Rows       []awaiting
	InputNote  string
	Flash      string
	Error      string
}

func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	d := approvalsData{IsApprover: sess.has("ledger_approver")}
	// The message is built here from a parsed id, never taken as text
	// from the URL.
	for _, done := range []string{"approved", "denied"} {
		if id, err := uuid.Parse(r.URL.Query().Get(done)); err == nil {
			d.Flash = fmt.Sprintf("Request %s %s.", id, done)
		}
	}
	if err := s.fillApprovals(r.Context(), sess, &d); err != nil {
		s.dbFail(w, sess, "the requests that wait for approval", err)
		return
	}
	s.render(w, http.StatusOK, "approvals", s.page(sess, "Approvals", "approvals", d))
}

func (s *Server) fillApprovals(ctx context.Context, sess *session, d *approvalsData) error {
	if !sess.callsAwaiting() {
		// A submitter: its own principal's waiting requests, by row
		// security, without the input (it may not read the log).
		rows, err := sess.read.Query(ctx, queryAwaitingOwn)
		if err != nil {
			return err
		}
		d.Rows, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (awaiting, error) {
			var a awaiting
			err := row.Scan(&a.ID, &a.Principal, &a.Tool, &a.RunID, &a.InputDigest, &a.SubmittedAt)
			a.Own = a.Principal == sess.principal
			return a, err
		})
		d.InputNote = "This login may not call ledger.awaiting_approval (ledger_approver, ledger_auditor and ledger_admin may): " +
			"it sees its own principal's waiting requests and their digests, not the inputs."
		return err
	}
	// ledger.awaiting_approval: the input as recorded, for approvers too,
	// who read neither the log nor the queue.
	list, err := ledger.AwaitingApproval(ctx, sess.read, awaitingPage)
	if err != nil {
		return err
	}
	for _, a := range list {
		d.Rows = append(d.Rows, awaiting{ID: a.ID, Principal: a.Principal, Tool: a.Tool, RunID: a.RunID, InputDigest: a.InputDigest,
			SubmittedAt: a.SubmittedAt, Input: prettyJSON(a.Input), Own: a.Principal == sess.principal})
	}
	return nil
}

// decideApproval approves or denies through ledger.approve or
// ledger.deny_approval, the calls `execledger approve` and `deny` make.
// An approval binds the input digest the page showed: if the request's
// input is not the one reviewed, SQL refuses it.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request, sess *session) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, http.StatusBadRequest, "not a request id")
		return
	}
	note := strings.TrimSpace(r.PostForm.Get("note"))
	digest := r.PostForm.Get("input_digest")
	action := r.PostForm.Get("decision")
	c := ledger.NewClient(sess.pool)
	defer c.Close()
	switch action {
	case "approve":
		err = c.Approve(r.Context(), id, note, digest)
	case "deny":
		err = c.DenyApproval(r.Context(), id, note)
	default:
		s.fail(w, sess, http.StatusBadRequest, "decision must be approve or deny")
		return
	}
	if err != nil {
		d := approvalsData{IsApprover: sess.has("ledger_approver"), Error: fmt.Sprintf("Request %s: %s", id, approvalError(err))}
		if ferr := s.fillApprovals(r.Context(), sess, &d); ferr != nil {
			s.dbFail(w, sess, "the requests that wait for approval", ferr)
			return
		}
		status := http.StatusConflict
		if errors.Is(err, ledger.ErrNotPermitted) {
			status = http.StatusForbidden
		}
		s.render(w, status, "approvals", s.page(sess, "Approvals", "approvals", d))
		return
	}
	s.log.Info("approval decided", "login", sess.login, "request", id.String(), "decision", action)
	done := "approved"
	if action == "deny" {
		done = "denied"
	}
	http.Redirect(w, r, "/approvals?"+done+"="+id.String(), http.StatusSeeOther)
}

// approvalError says in plain words why SQL refused a decision.
func approvalError(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "ledger: ") {
		// "ledger: approve: not permitted: <the SQL message>"
		msg = msg[strings.Index(msg, ": ")+2:]
	}
	if errors.Is(err, ledger.ErrNotPermitted) {
		return "refused: " + msg + " (approving needs ledger_approver and a principal other than the submitter's)"
	}
	return "refused: " + msg
}
