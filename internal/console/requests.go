package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/ledger"
)

// pageSize is how many requests a page of the list shows.
const pageSize = 50

// requestFilter is the list's query string.
type requestFilter struct {
	listFilter
	State, Run, ErrorKind, Key string
	after                      *cursor
}

// cursor is the keyset position of the last row of a page.
type cursor struct {
	at time.Time
	id uuid.UUID
}

func (c cursor) String() string { return c.at.UTC().Format(time.RFC3339Nano) + "_" + c.id.String() }

func parseCursor(s string) (*cursor, error) {
	at, id, ok := strings.Cut(s, "_")
	if !ok {
		return nil, errors.New("not a page cursor")
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil, errors.New("not a page cursor")
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, errors.New("not a page cursor")
	}
	return &cursor{at: t, id: u}, nil
}

var errorKinds = []string{"invalid_input", "policy_denied", "budget_exhausted", "approval_denied", "skill_not_active",
	"capability_denied", "workspace_scope_denied", "egress_denied", "quota_exceeded", "timed_out", "spawn_failed",
	"runtime_failure", "cancelled", "outcome_unknown"}

func validErrorKind(k string) bool {
	for _, e := range errorKinds {
		if e == k {
			return true
		}
	}
	return false
}

func parseRequestFilter(q url.Values) (requestFilter, error) {
	lf, err := parseListFilter(q)
	f := requestFilter{listFilter: lf, State: q.Get("state"), Run: strings.TrimSpace(q.Get("run")), ErrorKind: q.Get("error_kind"),
		Key: strings.TrimSpace(q.Get("key"))}
	if err != nil {
		return f, err
	}
	if f.State != "" && !ledger.State(f.State).Valid() {
		return f, fmt.Errorf("state %q is not a state", f.State)
	}
	if f.ErrorKind != "" && !validErrorKind(f.ErrorKind) {
		return f, fmt.Errorf("error kind %q is not an error kind", f.ErrorKind)
	}
	if a := q.Get("after"); a != "" {
		if f.after, err = parseCursor(a); err != nil {
			return f, err
		}
	}
	return f, nil
}

// sql is the list's statement for f, asking for one row more than a page.
// wide: the login sees every principal's rows (auditors, administrators,
// executors) and may read ledger.queue, which holds exactly the requests
// that are not final.
func (f requestFilter) sql(wide bool) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, vals ...any) {
		idx := make([]any, len(vals))
		for i, v := range vals {
			args = append(args, v)
			idx[i] = len(args)
		}
		conds = append(conds, fmt.Sprintf(cond, idx...))
	}
	if f.State != "" {
		add("state = $%d", f.State)
		switch ledger.State(f.State) {
		case ledger.StateFailed, ledger.StateDenied, ledger.StateCancelled:
			// Every such row has an error kind (the executor refuses a
			// final state whose error kind disagrees): over every
			// principal's rows the failures' index serves the filter.
			// Over one principal's (a filter, or row security) its own
			// index is the shorter walk.
			if wide && f.Principal == "" {
				conds = append(conds, "error_kind IS NOT NULL")
			}
		case ledger.StateSucceeded:
		default:
			// Not final: the request is in the queue, a small table,
			// and the rows are found through it rather than by walking
			// every request.
			if wide {
				add("id IN (SELECT q.id FROM ledger.queue q WHERE q.state = $%d)", f.State)
			}
		}
	}
	if f.Tool != "" {
		add("tool = $%d", f.Tool)
	}
	if f.Principal != "" {
		add("principal = $%d", f.Principal)
	}
	if f.Run != "" {
		add("run_id = $%d", f.Run)
	}
	if f.ErrorKind != "" {
		add("error_kind = $%d", f.ErrorKind)
	}
	if f.Key != "" {
		add("idempotency_key = $%d", f.Key)
	}
	if !f.since.IsZero() {
		add("submitted_at >= $%d", f.since)
	}
	if !f.until.IsZero() {
		add("submitted_at < $%d", f.until)
	}
	if f.after != nil {
		add("(submitted_at, id) < ($%d, $%d)", f.after.at, f.after.id)
	}
	q := queryRequests
	if len(conds) > 0 {
		q += "\nWHERE " + strings.Join(conds, " AND ")
	}
	return q + queryRequestsOrder + strconv.Itoa(pageSize+1), args
}

// query is f's query string without the cursor, for the next page's link.
func (f requestFilter) query() url.Values {
	return f.values(map[string]string{"state": f.State, "run": f.Run, "error_kind": f.ErrorKind, "key": f.Key})
}

type requestRow struct {
	ID             uuid.UUID
	Principal      string
	Tool           string
	RunID          *string
	IdempotencyKey *string
	State          string
	ErrorKind      *string
	SubmittedAt    time.Time
	FinishedAt     *time.Time
}

type requestsData struct {
	Filter     requestFilter
	States     []ledger.State
	ErrorKinds []string
	Rows       []requestRow
	Next       string // the next page's URL; "" on the last page
	First      string // the first page's URL when this is a later page
	Error      string
}

func (s *Server) requestsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	// Find: a request id opens its page; anything else is an
	// idempotency key.
	if find := strings.TrimSpace(q.Get("find")); find != "" {
		if id, err := uuid.Parse(find); err == nil {
			http.Redirect(w, r, "/requests/"+id.String(), http.StatusSeeOther)
			return
		}
		q.Del("find")
		q.Set("key", find)
		http.Redirect(w, r, "/requests?"+q.Encode(), http.StatusSeeOther)
		return
	}
	d := requestsData{States: ledger.States, ErrorKinds: errorKinds}
	f, err := parseRequestFilter(q)
	d.Filter = f
	if err != nil {
		d.Error = err.Error()
		s.render(w, http.StatusBadRequest, "requests", s.page(sess, "Requests", "requests", d))
		return
	}
	rows, err := s.listRequests(r, sess, f)
	if err != nil {
		s.dbFail(w, sess, "the requests", err)
		return
	}
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		last := rows[len(rows)-1]
		v := f.query()
		v.Set("after", cursor{at: last.SubmittedAt, id: last.ID}.String())
		d.Next = "/requests?" + v.Encode()
	}
	if f.after != nil {
		d.First = "/requests?" + f.query().Encode()
	}
	d.Rows = rows
	if q.Get("fragment") == "rows" {
		// Live updates: the table alone, as the page would show it now.
		s.renderFragment(w, "requests", "requests-table", d)
		return
	}
	s.render(w, http.StatusOK, "requests", s.page(sess, "Requests", "requests", d))
}

func (s *Server) listRequests(r *http.Request, sess *session, f requestFilter) ([]requestRow, error) {
	q, args := f.sql(sess.readsQueue())
	rows, err := sess.read.Query(r.Context(), q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (requestRow, error) {
		var x requestRow
		err := row.Scan(&x.ID, &x.Principal, &x.Tool, &x.RunID, &x.IdempotencyKey, &x.State, &x.ErrorKind, &x.SubmittedAt, &x.FinishedAt)
		return x, err
	})
}

// requestDetail is one request's row.
type requestDetail struct {
	requestRow
	InputDigest       string
	Error             *string
	Output            json.RawMessage
	Tier              *string
	AttestationDigest *string
}

// decision is one audit-trail row about the request.
type decision struct {
	Time                time.Time
	Kind                string
	Event               string
	Attempt             *int32
	Decision            *string
	Stage               *string
	ReasonCode          *string
	DeterminingPolicies []string
	PolicyDigest        *string
	Approver            *string
	State               *string
	ErrorKind           *string
	Resources           json.RawMessage
}

type timelineEvent struct {
	Version    int64
	Type       string
	RecordedAt time.Time
	Position   int64
	Leaf       *int64
	Actor      string
	Payload    string // pretty-printed, as stored (redacted when recorded)
	Metadata   string
}

type requestPageData struct {
	Request        requestDetail
	Final          bool // the request is final: its live part changes no more
	Decisions      []decision
	DecisionsNote  string
	Events         []timelineEvent
	Unsealed       []ledger.StreamEvent
	LogNote        string
	Attestation    *attestationCheck
	Proofs         *proofCheck
	CanDownload    bool
	ApprovalPrompt bool
	// Waiting is what an approval decides (ledger.awaiting_approval), for
	// logins that may call it, while the request waits for one.
	Waiting *awaiting
}

func (s *Server) requestPage(w http.ResponseWriter, r *http.Request, sess *session) {
	d, ok := s.requestHead(w, r, sess)
	if !ok {
		return
	}
	id := d.Request.ID
	ctx := r.Context()
	var envelope *signedEnvelope
	evs, err := ledger.ReadStreamSealed(ctx, sess.read, "request:"+id.String(), 0, 5000)
	switch {
	case isPermission(err):
		d.LogNote = "This login may not read the log: the event timeline, the attestation's envelope and the inclusion proofs need ledger_auditor, ledger_executor or ledger_admin."
	case err != nil:
		s.dbFail(w, sess, "the request's events", err)
		return
	default:
		d.Events, d.Unsealed, envelope = timeline(evs)
		d.CanDownload = true
	}
	if d.Request.AttestationDigest != nil {
		d.Attestation = checkAttestation(*d.Request.AttestationDigest, envelope, s.opts.Keys)
	}
	if d.LogNote == "" {
		d.Proofs = s.checkProofs(r, sess, id)
	}
	s.render(w, http.StatusOK, "request", s.page(sess, "Request "+id.String(), "requests", d))
}

// requestLive serves the part of a request's page that changes while it
// runs (its row, what an approval decides, the decisions), for
// console.js to replace in place until the request is final.
func (s *Server) requestLive(w http.ResponseWriter, r *http.Request, sess *session) {
	d, ok := s.requestHead(w, r, sess)
	if !ok {
		return
	}
	s.renderFragment(w, "request", "request-live", d)
}

// requestHead reads the request's row, its decisions and, while it waits
// for approval, what an approval decides; it answers the request itself
// and reports false when it could not.
func (s *Server) requestHead(w http.ResponseWriter, r *http.Request, sess *session) (requestPageData, bool) {
	var d requestPageData
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, http.StatusBadRequest, fmt.Sprintf("%q is not a request id (a UUID).", r.PathValue("id")))
		return d, false
	}
	ctx := r.Context()
	req := &d.Request
	err = sess.read.QueryRow(ctx, queryRequest, id).Scan(&req.ID, &req.Principal, &req.Tool, &req.RunID, &req.IdempotencyKey,
		&req.InputDigest, &req.State, &req.ErrorKind, &req.Error, &req.Output, &req.Tier, &req.AttestationDigest,
		&req.SubmittedAt, &req.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		s.fail(w, sess, http.StatusNotFound, fmt.Sprintf("No request %s, or none this login may see.", id))
		return d, false
	}
	if err != nil {
		s.dbFail(w, sess, "the request", err)
		return d, false
	}
	d.Final = ledger.State(req.State).Final()
	d.Decisions, err = s.decisions(r, sess, id)
	switch {
	case isPermission(err):
		d.DecisionsNote = "This login may not read the audit trail (ledger_submitter reads its own principal's, ledger_auditor and ledger_admin all)."
	case err != nil:
		s.dbFail(w, sess, "the audit trail", err)
		return d, false
	}
	d.ApprovalPrompt = req.State == string(ledger.StateAwaitingApproval) && sess.has("ledger_approver") && sess.principal != req.Principal
	if req.State == string(ledger.StateAwaitingApproval) && sess.callsAwaiting() {
		a, err := ledger.AwaitingApprovalOf(ctx, sess.read, id)
		switch {
		case err == nil:
			d.Waiting = &awaiting{ID: a.ID, InputDigest: a.InputDigest, Input: prettyJSON(a.Input)}
		case !errors.Is(err, ledger.ErrNotFound): // not found: decided since the row was read
			s.dbFail(w, sess, "what the approval decides", err)
			return d, false
		}
	}
	return d, true
}

func (s *Server) decisions(r *http.Request, sess *session, id uuid.UUID) ([]decision, error) {
	rows, err := sess.read.Query(r.Context(), queryDecisions, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (decision, error) {
		var x decision
		err := row.Scan(&x.Time, &x.Kind, &x.Event, &x.Attempt, &x.Decision, &x.Stage, &x.ReasonCode, &x.DeterminingPolicies,
			&x.PolicyDigest, &x.Approver, &x.State, &x.ErrorKind, &x.Resources)
		return x, err
	})
}

// signedEnvelope is the attestation of an attestation.signed or
// execution.completed event's payload.
type signedEnvelope struct {
	KeyID    string `json:"key_id"`
	Envelope string `json:"envelope"`
}

// timeline turns the stream into the page's events, setting apart those
// the log passed without sealing, and finds the newest attestation.
func timeline(evs []ledger.StreamEvent) ([]timelineEvent, []ledger.StreamEvent, *signedEnvelope) {
	out := make([]timelineEvent, 0, len(evs))
	var unsealed []ledger.StreamEvent
	var env *signedEnvelope
	for _, ev := range evs {
		if ev.Unsealed != "" {
			unsealed = append(unsealed, ev)
			continue
		}
		var m struct {
			Actor string `json:"actor"`
		}
		_ = json.Unmarshal(ev.Metadata, &m)
		out = append(out, timelineEvent{Version: ev.Version, Type: ev.Type, RecordedAt: ev.RecordedAt, Position: ev.Position,
			Leaf: ev.Leaf, Actor: m.Actor, Payload: prettyJSON(ev.Payload), Metadata: prettyJSON(ev.Metadata)})
		if contract.IsAttesting(ev.Type) {
			var p signedEnvelope
			if json.Unmarshal(ev.Payload, &p) == nil {
				env = &p
			}
		}
	}
	return out, unsealed, env
}
