package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/ledger"
)

// queryAuditTrail reads ledger.audit_trail as the caller's login, so its
// row security decides what the caller sees. auditWhere's conditions go
// between the two; each names an indexed column directly (no "$1 IS NULL
// OR …"), so a principal and time range is a range scan of
// audit_trail_principal_time_idx under any plan, generic or custom.
const (
	queryAuditTrail = `SELECT position, tx_id::text, recorded_at, kind, event_type, request_id, principal, tool,
       run_id, attempt, decision, stage, reason_code, determining_policies, policy_digest, approver,
       state, tier, error_kind, resources, output_bytes, attestation_digest, attestation_position,
       request_position
FROM ledger.audit_trail`
	queryAuditOrder = ` ORDER BY recorded_at, position`
)

// auditFilter is what audit's flags select; zero fields select everything.
type auditFilter struct {
	principal, tool string
	since, until    time.Time // [since, until)
	request         uuid.UUID
	limit           int // 0: no limit
}

// auditQuery is the statement and arguments for f. It asks for one row
// more than the limit, so the caller can tell that more rows match.
func auditQuery(f auditFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.principal != "" {
		add("principal = $%d", f.principal)
	}
	if f.tool != "" {
		add("tool = $%d", f.tool)
	}
	if !f.since.IsZero() {
		add("recorded_at >= $%d", f.since)
	}
	if !f.until.IsZero() {
		add("recorded_at < $%d", f.until)
	}
	if f.request != uuid.Nil {
		add("request_id = $%d", f.request)
	}
	q := queryAuditTrail
	if len(conds) > 0 {
		q += "\nWHERE " + strings.Join(conds, " AND ")
	}
	q += queryAuditOrder
	if f.limit > 0 {
		args = append(args, f.limit+1)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	return q, args
}

// auditRow is one row of ledger.audit_trail; in --json, one line.
type auditRow struct {
	Position            int64           `json:"position"`
	TxID                string          `json:"tx_id"`
	RecordedAt          time.Time       `json:"recorded_at"`
	Kind                string          `json:"kind"` // decision or outcome
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
	AttestationPosition *int64          `json:"attestation_position"`
	RequestPosition     int64           `json:"request_position"`
}

func scanAuditRow(row pgx.CollectableRow) (auditRow, error) {
	var r auditRow
	err := row.Scan(&r.Position, &r.TxID, &r.RecordedAt, &r.Kind, &r.EventType, &r.RequestID, &r.Principal, &r.Tool,
		&r.RunID, &r.Attempt, &r.Decision, &r.Stage, &r.ReasonCode, &r.DeterminingPolicies, &r.PolicyDigest, &r.Approver,
		&r.State, &r.Tier, &r.ErrorKind, &r.Resources, &r.OutputBytes, &r.AttestationDigest, &r.AttestationPosition,
		&r.RequestPosition)
	return r, err
}

// eachAuditRow calls fn with each row f selects, in order, as they arrive,
// and reports whether more rows match than f's limit.
func eachAuditRow(ctx context.Context, db ledger.DBTX, f auditFilter, fn func(auditRow) error) (more bool, err error) {
	q, args := auditQuery(f)
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("audit trail: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if n++; f.limit > 0 && n > f.limit {
			return true, nil
		}
		r, err := scanAuditRow(rows)
		if err != nil {
			return false, fmt.Errorf("audit trail: %w", err)
		}
		if err := fn(r); err != nil {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("audit trail: %w", err)
	}
	return false, nil
}

func newAuditCmd(e *env) *cobra.Command {
	var principal, tool, since, until, request string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit trail: the decisions and outcomes the caller may see",
		Long: `Audit reads ledger.audit_trail in recorded_at, position order, as the login's row security
shows it: auditors and admins every row, a submitter its own principal's.

--since (inclusive) and --until (exclusive) take an RFC 3339 time or a duration back from now
(90m, 24h, 7d). It prints the earliest --limit rows, with a note on stderr when more match.`,
		Example: `  execledger audit --since 24h
  execledger audit --principal alice --tool echo --limit 0 --json
  execledger audit --request 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := auditFlags(time.Now(), principal, tool, since, until, request, limit)
			if err != nil {
				return fail(exitUsage, "audit: %v", err)
			}
			return runAudit(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&principal, "principal", "", "only this principal's rows")
	fl.StringVar(&tool, "tool", "", "only this tool's rows")
	fl.StringVar(&since, "since", "", "from this `TIME` on: RFC 3339, or a duration before now (90m, 24h, 7d)")
	fl.StringVar(&until, "until", "", "before this `TIME`: RFC 3339, or a duration before now")
	fl.StringVar(&request, "request", "", "only this request's rows (its `ID`)")
	fl.IntVar(&limit, "limit", 1000, "at most `N` rows, the earliest; 0: no limit")
	e.jsonFlag(cmd, "print one JSON object per line")
	e.configFlag(cmd)
	return cmd
}

func runAudit(ctx context.Context, e *env, f auditFilter) error {
	_, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	p := newAuditPrinter(e.io.out, e.json)
	more, err := eachAuditRow(ctx, pool, f, p.row)
	if err == nil {
		err = p.flush()
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if more {
		fmt.Fprintf(e.io.err, "execledger: audit: the first %d rows; more match (raise --limit, or narrow --since/--until)\n", f.limit)
	}
	return nil
}

// auditFlags checks audit's flags and makes its filter; times relative to now.
func auditFlags(now time.Time, principal, tool, since, until, request string, limit int) (auditFilter, error) {
	f := auditFilter{principal: principal, tool: tool, limit: limit}
	var err error
	if f.since, err = parseTimeFlag(since, now); err != nil {
		return f, fmt.Errorf("--since: %w", err)
	}
	if f.until, err = parseTimeFlag(until, now); err != nil {
		return f, fmt.Errorf("--until: %w", err)
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.since.Before(f.until) {
		return f, fmt.Errorf("--since %s is not before --until %s", f.since.Format(time.RFC3339), f.until.Format(time.RFC3339))
	}
	if request != "" {
		if f.request, err = uuid.Parse(request); err != nil {
			return f, fmt.Errorf("--request: %q is not a request id (a UUID)", request)
		}
	}
	if limit < 0 {
		return f, fmt.Errorf("--limit: %d is negative (0 means no limit)", limit)
	}
	return f, nil
}

var errBadTime = errors.New("want an RFC 3339 time (2025-01-31T09:00:00Z) or a duration before now (90m, 24h, 7d)")

// parseTimeFlag reads an RFC 3339 time, or a positive duration meaning
// that long before now (Go's units, plus d for 24h); "" is the zero time.
func parseTimeFlag(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 365*100 {
			return time.Time{}, fmt.Errorf("%q: %w", s, errBadTime)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return time.Time{}, fmt.Errorf("%q: %w", s, errBadTime)
		}
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%q: the duration must be positive (it counts back from now)", s)
	}
	return now.Add(-d), nil
}

// auditPrinter writes rows as JSON lines, or as a table it aligns at flush.
type auditPrinter struct {
	enc *json.Encoder
	tw  *tabwriter.Writer
}

func newAuditPrinter(w io.Writer, asJSON bool) *auditPrinter {
	if asJSON {
		return &auditPrinter{enc: json.NewEncoder(w)}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POSITION\tTIME\tKIND\tPRINCIPAL\tTOOL\tREQUEST\tRESULT\tSTAGE\tREASON\tTIER")
	return &auditPrinter{tw: tw}
}

func (p *auditPrinter) row(r auditRow) error {
	if p.enc != nil {
		return p.enc.Encode(r)
	}
	result, reason := r.Decision, r.ReasonCode
	if r.Kind == "outcome" {
		result, reason = r.State, r.ErrorKind
	}
	_, err := fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Position,
		r.RecordedAt.UTC().Format("2006-01-02T15:04:05.000Z"), r.Kind, r.Principal, r.Tool, r.RequestID,
		orDash(result), orDash(r.Stage), orDash(reason), orDash(r.Tier))
	return err
}

func (p *auditPrinter) flush() error {
	if p.tw != nil {
		return p.tw.Flush()
	}
	return nil
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}
