package console

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// queryAudit reads ledger.audit_trail as the login (row security decides
// the rows); auditFilter.sql adds conditions naming indexed columns.
const queryAudit = `SELECT position, recorded_at, kind, event_type, request_id, principal, tool, run_id, attempt,
       decision, stage, reason_code, coalesce(determining_policies, '{}'), policy_digest, approver, state, tier,
       error_kind, resources, output_bytes, attestation_digest
FROM ledger.audit_trail`

type auditFilter struct {
	Principal, Tool, Request, Kind string
	Since, Until                   string
	since, until                   time.Time
	request                        uuid.UUID
	before                         *auditCursor
}

type auditCursor struct {
	at  time.Time
	pos int64
}

func parseAuditFilter(q url.Values) (auditFilter, error) {
	f := auditFilter{Principal: strings.TrimSpace(q.Get("principal")), Tool: strings.TrimSpace(q.Get("tool")),
		Request: strings.TrimSpace(q.Get("request")), Kind: q.Get("kind"), Since: q.Get("since"), Until: q.Get("until")}
	var err error
	if f.since, err = parseTime("since", f.Since); err != nil {
		return f, err
	}
	if f.until, err = parseTime("until", f.Until); err != nil {
		return f, err
	}
	if f.Request != "" {
		if f.request, err = uuid.Parse(f.Request); err != nil {
			return f, fmt.Errorf("request %q is not a request id", f.Request)
		}
	}
	if f.Kind != "" && f.Kind != "decision" && f.Kind != "outcome" {
		return f, fmt.Errorf("kind %q is not decision or outcome", f.Kind)
	}
	if b := q.Get("before"); b != "" {
		at, pos, ok := strings.Cut(b, "_")
		t, err1 := time.Parse(time.RFC3339Nano, at)
		p, err2 := strconv.ParseInt(pos, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return f, fmt.Errorf("not a page cursor")
		}
		f.before = &auditCursor{at: t, pos: p}
	}
	return f, nil
}

// sql is the newest-first statement for f; limit 0 reads every row.
func (f auditFilter) sql(limit int) (string, []any) {
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
	if f.Principal != "" {
		add("principal = $%d", f.Principal)
	}
	if f.Tool != "" {
		add("tool = $%d", f.Tool)
	}
	if f.request != uuid.Nil {
		add("request_id = $%d", f.request)
	}
	if f.Kind != "" {
		add("kind = $%d", f.Kind)
	}
	if !f.since.IsZero() {
		add("recorded_at >= $%d", f.since)
	}
	if !f.until.IsZero() {
		add("recorded_at < $%d", f.until)
	}
	if f.before != nil {
		add("(recorded_at, position) < ($%d, $%d)", f.before.at, f.before.pos)
	}
	q := queryAudit
	if len(conds) > 0 {
		q += "\nWHERE " + strings.Join(conds, " AND ")
	}
	q += " ORDER BY recorded_at DESC, position DESC"
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	return q, args
}

func (f auditFilter) query() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"principal": f.Principal, "tool": f.Tool, "request": f.Request, "kind": f.Kind,
		"since": f.Since, "until": f.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// auditRow is one row of ledger.audit_trail; its JSON is a JSON Lines
// export's line.
type auditRow struct {
	Position            int64           `json:"position"`
	RecordedAt          time.Time       `json:"recorded_at"`
	Kind                string          `json:"kind"`
	EventType           string          `json:"event_type"`
	RequestID           uuid.UUID       `json:"request_id"`
	Principal           string          `json:"principal"`
	Tool                string          `json:"tool"`
	RunID               *string         `json:"run_id"`
	Attempt             *int32          `json:"attempt"`
	Decision            *string         `json:"decision"`
	Stage               *string         `json:"stage"`
	ReasonCode          *string         `json:"reason_code"`
	DeterminingPolicies []string        `json:"determining_policies"`
	PolicyDigest        *string         `json:"policy_digest"`
	Approver            *string         `json:"approver"`
	State               *string         `json:"state"`
	Tier                *string         `json:"tier"`
	ErrorKind           *string         `json:"error_kind"`
	Resources           json.RawMessage `json:"resources"`
	OutputBytes         *int64          `json:"output_bytes"`
	AttestationDigest   *string         `json:"attestation_digest"`
}

func scanAudit(row pgx.CollectableRow) (auditRow, error) {
	var a auditRow
	err := row.Scan(&a.Position, &a.RecordedAt, &a.Kind, &a.EventType, &a.RequestID, &a.Principal, &a.Tool, &a.RunID,
		&a.Attempt, &a.Decision, &a.Stage, &a.ReasonCode, &a.DeterminingPolicies, &a.PolicyDigest, &a.Approver, &a.State,
		&a.Tier, &a.ErrorKind, &a.Resources, &a.OutputBytes, &a.AttestationDigest)
	return a, err
}

type auditData struct {
	Filter      auditFilter
	Rows        []auditRow
	Next, First string
	ExportCSV   string
	ExportJSONL string
	Error       string
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request, sess *session) {
	f, err := parseAuditFilter(r.URL.Query())
	d := auditData{Filter: f}
	if err != nil {
		d.Error = err.Error()
		s.render(w, http.StatusBadRequest, "audit", s.page(sess, "Audit trail", "audit", d))
		return
	}
	q, args := f.sql(pageSize + 1)
	rows, err := sess.pool.Query(r.Context(), q, args...)
	if err == nil {
		d.Rows, err = pgx.CollectRows(rows, scanAudit)
	}
	if err != nil {
		s.dbFail(w, sess, "the audit trail", err)
		return
	}
	if len(d.Rows) > pageSize {
		d.Rows = d.Rows[:pageSize]
		last := d.Rows[len(d.Rows)-1]
		v := f.query()
		v.Set("before", last.RecordedAt.UTC().Format(time.RFC3339Nano)+"_"+strconv.FormatInt(last.Position, 10))
		d.Next = "/audit?" + v.Encode()
	}
	if f.before != nil {
		d.First = "/audit?" + f.query().Encode()
	}
	v := f.query()
	v.Set("format", "csv")
	d.ExportCSV = "/audit/export?" + v.Encode()
	v.Set("format", "jsonl")
	d.ExportJSONL = "/audit/export?" + v.Encode()
	s.render(w, http.StatusOK, "audit", s.page(sess, "Audit trail", "audit", d))
}

var auditCSVHeader = []string{"position", "recorded_at", "kind", "event_type", "request_id", "principal", "tool", "run_id",
	"attempt", "decision", "stage", "reason_code", "determining_policies", "policy_digest", "approver", "state", "tier",
	"error_kind", "resources", "output_bytes", "attestation_digest"}

// auditExport streams every row the filter selects (no page limit) as
// CSV or JSON Lines, newest first.
func (s *Server) auditExport(w http.ResponseWriter, r *http.Request, sess *session) {
	f, err := parseAuditFilter(r.URL.Query())
	if err != nil {
		s.fail(w, sess, http.StatusBadRequest, err.Error())
		return
	}
	format := r.URL.Query().Get("format")
	if format != "csv" && format != "jsonl" {
		s.fail(w, sess, http.StatusBadRequest, "format must be csv or jsonl")
		return
	}
	q, args := f.sql(0)
	rows, err := sess.pool.Query(r.Context(), q, args...)
	if err != nil {
		s.dbFail(w, sess, "the audit trail", err)
		return
	}
	defer rows.Close()
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.Header().Set("Content-Disposition", `attachment; filename="audit-trail.`+format+`"`)
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	if format == "csv" {
		_ = cw.Write(auditCSVHeader)
	}
	enc := json.NewEncoder(bw)
	for rows.Next() {
		a, err := scanAudit(rows)
		if err != nil {
			s.log.Warn("audit export", "error", err)
			return
		}
		if format == "jsonl" {
			if enc.Encode(a) != nil {
				return
			}
			continue
		}
		if cw.Write(a.csv()) != nil {
			return
		}
	}
	if err := rows.Err(); err != nil {
		// The status line is gone; the truncated body ends without
		// its last line, and the log says why.
		s.log.Warn("audit export", "error", err)
		return
	}
	cw.Flush()
	_ = bw.Flush()
}

func (a auditRow) csv() []string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return neutralize(*p)
	}
	num := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	attempt := ""
	if a.Attempt != nil {
		attempt = strconv.Itoa(int(*a.Attempt))
	}
	return []string{strconv.FormatInt(a.Position, 10), a.RecordedAt.UTC().Format(time.RFC3339Nano), a.Kind, a.EventType,
		a.RequestID.String(), neutralize(a.Principal), neutralize(a.Tool), str(a.RunID), attempt, str(a.Decision), str(a.Stage),
		str(a.ReasonCode), neutralize(strings.Join(a.DeterminingPolicies, " ")), str(a.PolicyDigest), str(a.Approver),
		str(a.State), str(a.Tier), str(a.ErrorKind), neutralize(string(a.Resources)), num(a.OutputBytes), str(a.AttestationDigest)}
}

// neutralize keeps a spreadsheet from running a cell as a formula: a
// value a submitter chose (a run id, a tool) that begins with =, +, - or
// @ gets a leading apostrophe (OWASP's CSV injection advice).
func neutralize(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
