package console

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/audit"
)

// auditFilter is the audit trail page's query string: the shared filters
// and the request, kind and page cursor that internal/audit reads by.
type auditFilter struct {
	listFilter
	Request, Kind string
	request       uuid.UUID
	after         *audit.Cursor
}

func parseAuditFilter(q url.Values) (auditFilter, error) {
	lf, err := parseListFilter(q)
	f := auditFilter{listFilter: lf, Request: strings.TrimSpace(q.Get("request")), Kind: q.Get("kind")}
	if err != nil {
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
	if a := q.Get("after"); a != "" {
		c, err := audit.ParseCursor(a)
		if err != nil {
			return f, errors.New("not a page cursor")
		}
		f.after = &c
	}
	return f, nil
}

// filter is f as internal/audit's Filter, newest first; limit 0 reads
// every row.
func (f auditFilter) filter(limit int) audit.Filter {
	return audit.Filter{Principal: f.Principal, Tool: f.Tool, Since: f.since, Until: f.until, Request: f.request, Kind: f.Kind,
		Newest: true, After: f.after, Limit: limit}
}

func (f auditFilter) query() url.Values {
	return f.values(map[string]string{"request": f.Request, "kind": f.Kind})
}

type auditData struct {
	Filter      auditFilter
	Rows        []audit.Row
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
	rows, next, err := audit.Page(r.Context(), sess.read, f.filter(pageSize))
	if err != nil {
		s.dbFail(w, sess, "the audit trail", err)
		return
	}
	d.Rows = rows
	if next != nil {
		v := f.query()
		v.Set("after", next.String())
		d.Next = "/audit?" + v.Encode()
	}
	if f.after != nil {
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
	// The first row decides the status: a refusal is an error page,
	// after it the rows stream.
	started := false
	start := func() {
		started = true
		if format == "csv" {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		w.Header().Set("Content-Disposition", `attachment; filename="audit-trail.`+format+`"`)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	enc := json.NewEncoder(bw)
	_, err = audit.Each(r.Context(), sess.read, f.filter(0), func(a audit.Row) error {
		if !started {
			start()
			if format == "csv" {
				_ = cw.Write(auditCSVHeader)
			}
		}
		if format == "jsonl" {
			return enc.Encode(a)
		}
		return cw.Write(auditCSV(a))
	})
	if err != nil && !started {
		s.dbFail(w, sess, "the audit trail", err)
		return
	}
	if err != nil {
		// The status line is gone; the truncated body ends without
		// its last line, and the log says why.
		s.log.Warn("audit export", "error", err)
		return
	}
	if !started {
		start()
		if format == "csv" {
			_ = cw.Write(auditCSVHeader)
		}
	}
	cw.Flush()
	_ = bw.Flush()
}

// auditCSV is a row as the CSV export's record: the columns of
// auditCSVHeader, cells a submitter chose neutralized.
func auditCSV(a audit.Row) []string {
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
