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
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/audit"
)

// audit reads the audit trail (internal/audit) with the filter its flags
// make, and prints the rows as a table or JSON lines.

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

func runAudit(ctx context.Context, e *env, f audit.Filter) error {
	_, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	p := newAuditPrinter(e.io.out, e.json)
	more, err := audit.Each(ctx, pool, f, p.row)
	if err == nil {
		err = p.flush()
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if more {
		fmt.Fprintf(e.io.err, "execledger: audit: the first %d rows; more match (raise --limit, or narrow --since/--until)\n", f.Limit)
	}
	return nil
}

// auditFlags checks audit's flags and makes its filter; times relative to now.
func auditFlags(now time.Time, principal, tool, since, until, request string, limit int) (audit.Filter, error) {
	f := audit.Filter{Principal: principal, Tool: tool, Limit: limit}
	var err error
	if f.Since, err = parseTimeFlag(since, now); err != nil {
		return f, fmt.Errorf("--since: %w", err)
	}
	if f.Until, err = parseTimeFlag(until, now); err != nil {
		return f, fmt.Errorf("--until: %w", err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, fmt.Errorf("--since %s is not before --until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	if request != "" {
		if f.Request, err = uuid.Parse(request); err != nil {
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

func (p *auditPrinter) row(r audit.Row) error {
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
